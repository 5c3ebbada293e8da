import Foundation
import Testing

/// One way a worker gets stopped, as an operator, a terminal or a supervisor stops it.
public enum WorkerStop: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// Ctrl-C in the worker's terminal would send SIGINT to its process group; these reach the worker alone.
    case sigintToWorker, sigtermToWorker
    /// `kill -- -PGID`, or a terminal's Ctrl-C: the worker's whole process group.
    case sigintToGroup, sigtermToGroup
    /// Someone signals an isolated export process by hand (`pkill -f _run-job`).
    case sigintToChild, sigtermToChild
    /// The worker's terminal or SSH session closed: SIGHUP to the worker alone, or to its whole process
    /// group (the kernel's hangup to the foreground group).
    case sighupToWorker, sighupToGroup
    /// systemd's default `KillMode=control-group` (and a container stop): SIGTERM to every process.
    case controlGroup
    /// A crash, the OOM killer, `kill -9`.
    case sigkillToWorker, sigkillToChild

    public static let inProcess: [WorkerStop] = [
        .sigintToWorker, .sigtermToWorker, .sigintToGroup, .sigtermToGroup, .sighupToWorker, .sighupToGroup,
        .controlGroup, .sigkillToWorker,
    ]

    public var testDescription: String { rawValue }

    /// Whether it aims at an isolated export process (there is none in process).
    public var needsChild: Bool { [.sigintToChild, .sigtermToChild, .sigkillToChild].contains(self) }

    /// A crash counts an attempt; a stop never does.
    public var countsAnAttempt: Bool { self == .sigkillToWorker || self == .sigkillToChild }

    /// Whether the worker ends (it drains, or dies); otherwise it goes on and runs the job again.
    public var endsTheWorker: Bool { !needsChild }
}

/// Stops a worker in the middle of a job in one of the `WorkerStop` ways, restarts it if it ended,
/// and checks what every stop must leave: the job never cancelled, completed exactly once (one
/// "job completed" line in every worker's log together), with the attempts a crash counts and a
/// stop does not, and one output with no temporary file left beside it at any point after the stop.
/// Works on any store: it reads the job's status file as a poller would.
public struct StopDrill: Sendable {
    /// `reel work` and its store options, without `--drain` (e.g. `["work", "--jobs", "1", "--isolate"]`).
    public var work: [String]
    public var environment: [String: String]
    /// The folder of status files (`<spool>/status`, or a fleet's `--status-dir`).
    public var statusFolder: URL
    /// The folder outputs go to (it must hold only this drill's job).
    public var outputs: URL

    public init(work: [String], environment: [String: String], statusFolder: URL, outputs: URL) {
        self.work = work
        self.environment = environment
        self.statusFolder = statusFolder
        self.outputs = outputs
    }

    /// The job's status file, decoded loosely.
    public func status(_ id: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: statusFolder.appendingPathComponent("\(id).json").path)
        else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    public func state(_ id: String) -> String? { status(id)?["state"] as? String }

    /// Exporting, and some way in.
    func isUnderWay(_ id: String) -> Bool {
        guard let status = status(id), status["state"] as? String == "exporting",
            let progress = status["progress"] as? Double
        else { return false }
        return progress > 0.02
    }

    /// Runs the drill on the job `id` (submitted, not yet started).
    public func run(_ stop: WorkerStop, job id: String) async throws {
        var logs: [BackgroundProcess] = []
        let worker = try ReelBinary.start(work, environment: environment)
        logs.append(worker)
        let started = await eventually(within: .seconds(120)) { isUnderWay(id) ? true : nil }
        #expect(started != nil, "the job never got going: \(worker.output)")
        var child: Int32?
        if work.contains("--no-isolate") == false {
            child = await eventually(within: .seconds(30)) { Processes.children(of: worker.pid).first }
            #expect(child != nil, "no export process under the worker")
        }
        switch stop {
        case .sigintToWorker: worker.signal(SIGINT)
        case .sigtermToWorker: worker.signal(SIGTERM)
        case .sigintToGroup: worker.signalGroup(SIGINT)
        case .sigtermToGroup: worker.signalGroup(SIGTERM)
        case .sighupToWorker: worker.signal(SIGHUP)
        case .sighupToGroup: worker.signalGroup(SIGHUP)
        case .sigintToChild: if let child { kill(child, SIGINT) }
        case .sigtermToChild: if let child { kill(child, SIGTERM) }
        case .controlGroup:
            worker.signal(SIGTERM)
            if let child { kill(child, SIGTERM) }
        case .sigkillToWorker: worker.signal(SIGKILL)
        case .sigkillToChild: if let child { kill(child, SIGKILL) }
        }
        if stop.endsTheWorker {
            let ended = try await worker.exit(within: .seconds(120))
            if stop == .sigkillToWorker {
                #expect(ended.reason == .uncaughtSignal)
                // Its export process ends by itself (its input closed) and removes its temporary file,
                // before anyone rescues the job.
                if let child {
                    let gone = await eventually(within: .seconds(10)) { Processes.isGone(child) ? true : nil }
                    #expect(gone != nil, "the export process outlived its worker")
                }
            } else {
                #expect(ended.reason == .exit && ended.status == 0, "\(worker.output)")
                // Every stop signal is logged as the drain it starts, SIGHUP as SIGTERM.
                #expect(worker.output.contains("stopping: finishing running jobs"), "\(worker.output)")
            }
            // (A worker killed with its export in process cannot clean up: the next worker's rescue
            // does, which the end of the drill checks.)
            if child != nil || stop != .sigkillToWorker {
                #expect(leftovers().isEmpty, "left beside the output: \(leftovers())")
            }
        }
        #expect(state(id) != "cancelled", "a \(stop) cancelled the job")
        if stop.endsTheWorker {
            if state(id) != "completed" {
                let again = try ReelBinary.start(work + ["--drain"], environment: environment)
                logs.append(again)
                let ended = try await again.exit(within: .seconds(180))
                #expect(ended.reason == .exit && ended.status == 0, "\(again.output)")
            }
        } else {
            let done = await eventually(within: .seconds(180)) {
                ["completed", "failed", "cancelled"].contains(state(id) ?? "") ? true : nil
            }
            #expect(done != nil)
            await worker.stop()
        }
        let status = try #require(self.status(id))
        #expect(status["state"] as? String == "completed", "\(status)")
        let attempts = status["attempts"] as? Int
        #expect(attempts == (stop.countsAnAttempt ? 2 : 1), "attempts: \(attempts ?? -1)")
        let completions = logs.map { $0.output.components(separatedBy: "\n") }.joined()
            .filter { $0.contains("job completed") && $0.contains(id) && !$0.contains("method=adopted") }
        #expect(completions.count == 1, "completed \(completions.count) times")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []
        #expect(files.count == 1 && !files[0].hasPrefix("."), "outputs: \(files)")
    }

    /// Hidden files beside the outputs: temporary outputs and publish receipts.
    public func leftovers() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: outputs.path)) ?? []).filter { $0.hasPrefix(".") }
    }
}

/// What `/proc` says about processes.
public enum Processes {
    /// The processes whose parent is `pid`.
    public static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { parent(of: $0) == pid }
    }

    /// Whether `pid` has ended (gone, or a zombie nobody reaped yet).
    public static func isGone(_ pid: Int32) -> Bool {
        guard let fields = stat(pid) else { return true }
        return fields.state == "Z"
    }

    static func parent(of pid: Int32) -> Int32? { stat(pid)?.parent }

    /// `/proc/<pid>/stat`'s state and parent (the fields after the command's closing parenthesis).
    private static func stat(_ pid: Int32) -> (state: String, parent: Int32)? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 2, let parent = Int32(fields[1]) else { return nil }
        return (String(fields[0]), parent)
    }
}
