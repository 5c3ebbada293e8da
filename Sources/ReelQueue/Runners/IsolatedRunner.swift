import Foundation
import Logging
import ReelExport
internal import ReelMedia
import ReelSystem
import Synchronization

/// How `reel work --isolate` starts an export in a child process.
public struct Isolation: Sendable {
    /// The `reel` executable (it runs `reel _run-job`).
    public var executable: String
    /// A folder of user presets the child loads too.
    public var presetsFolder: String?
    /// The child shows FFmpeg's own log too (`reel work --verbose`).
    public var verbose: Bool
    /// Environment the child gets besides the worker's own (its log level and format, so its lines,
    /// which the worker passes through to its stderr, look like the worker's).
    public var environment: [String: String]

    public init(
        executable: String, presetsFolder: String? = nil, verbose: Bool = false, environment: [String: String] = [:]
    ) {
        self.executable = executable
        self.presetsFolder = presetsFolder
        self.verbose = verbose
        self.environment = environment
    }
}

/// Runs one claimed job as a child `reel _run-job` process, so a crash inside a codec takes down only
/// that attempt. The worker keeps the lease; the child gets a `ChildRequest` and reports `ExportEvent`
/// lines.
///
/// The child leads a process group of its own: a terminal's Ctrl-C or `kill -- -PGID` aimed at the
/// worker reaches the worker alone, which decides what happens to its jobs. A signal that reaches the
/// child anyway (systemd's default `KillMode=control-group` signals every process of the service, or
/// someone signals it by hand) stops the export, and the attempt ends `interrupted`: handed back, not
/// cancelled. Stopping the job sends the child SIGTERM, and SIGKILL 5 s later if it is still there;
/// both go through its pidfd, so neither can reach another process once it has ended. The child ends
/// itself when the worker dies (its standard input reads end-of-file), removing its temporary output.
struct IsolatedRunner: ExportRunner {
    let isolation: Isolation
    let limits: InputLimits
    let stallTimeout: TimeInterval
    let logger: Logger
    /// The metadata policy of jobs that did not choose one: the child gets the spec with it decided.
    var metadataDefault = MetadataPolicy.keep

    /// The child process, as the job's stop handle.
    final class Child: JobHandle {
        let process: SpawnedProcess
        init(_ process: SpawnedProcess) { self.process = process }
        func stop() {
            process.signal(SIGTERM)
            // A child that does not stop within 5 s is killed; after its end the pidfd makes this a no-op.
            let process = process
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { process.signal(SIGKILL) }
        }
    }

    /// What the child reported.
    private struct Report {
        var result: JobResult?
        var failure: JobError?
        var lastLine = ContinuousClock.now
        var stderrTail: [String] = []
        var termination: SpawnedProcess.Termination?
    }

    func run(_ job: RunningJob, threads: Int, confirm: @escaping @Sendable () async -> PublishVerdict) async
        -> ExportAttempt
    {
        var spec = job.spec
        spec.metadata = spec.metadata(workerDefault: metadataDefault)
        spec.metadataChosen = true
        let request = ChildRequest(
            spec: spec, threads: threads, stallTimeout: stallTimeout, limits: limits,
            presetsFolder: isolation.presetsFolder, verbose: isolation.verbose, attemptTag: job.lease.attemptTag)
        let requestLine: Data
        do {
            requestLine = try JSONCoding.lineEncoder.encode(request) + Data("\n".utf8)
        } catch {
            return .failed(
                JobError(code: .internal, message: "cannot encode the job for its process: \(error)", retryable: false))
        }
        // Swift's crash backtracer would keep a crashed child alive while it symbolicates (seconds to
        // minutes); the worker records the signal instead.
        var environment = ProcessInfo.processInfo.environment.merging(isolation.environment) { $1 }
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child: SpawnedProcess
        do {
            child = try SpawnedProcess.start(
                isolation.executable, arguments: ["_run-job"], environment: environment, withInput: true,
                newProcessGroup: true)
        } catch {
            return .failed(JobError(code: .internal, message: error.description, retryable: true))
        }
        let ended = DispatchGroup()
        let began = ContinuousClock.now
        // Stdin stays open: the child asks before it publishes, and the answer goes there. (A child that
        // is already gone makes these writes fail, never raise SIGPIPE in the worker.)
        let toChild = child.input!
        toChild.write(requestLine)
        job.attach(Child(child))

        let report = Mutex(Report())
        ended.enter()
        startThread(named: "reel-child-exit") {
            let termination = child.waitForExit()
            report.withLock { $0.termination = termination }
            ended.leave()
        }
        // Events on stdout, the child's log on stderr: each drained on a thread of its own (never the
        // cooperative pool), so a chatty child cannot block on a full pipe.
        ended.enter()
        startThread(named: "reel-child-events") {
            Self.forEachLine(of: child.output) { line in
                report.withLock { $0.lastLine = .now }
                switch ChildMessage(jsonLine: line) {
                case .event(.progress(let progress))? where job.spec.cache != nil:
                    let items = JobItems(done: progress.frames, total: job.spec.cache?.assets.count ?? 0)
                    job.report(JobProgress(items: items, since: began))
                case .event(.progress(let progress))?:
                    job.report(
                        JobProgress(
                            fraction: progress.progress, phase: progress.phase, framesPerSecond: progress.fps,
                            secondsRemaining: progress.etaSeconds, renditions: progress.renditions ?? []))
                case .event(.completed(let completion))?:
                    var result = JobResult(completion.result)
                    result.ladder = completion.ladder
                    result.thumbnails = completion.thumbnails
                    result.cache = completion.cache
                    report.withLock { $0.result = result }
                case .event(.failed(let failure))?:
                    report.withLock { $0.failure = JobError(failure) }
                case .publishRequest?:
                    // The child's output is complete: only the lease holder publishes it. (The child
                    // waits for the answer, so this reader may wait for it too.)
                    let answer =
                        switch PublishVerdict.blocking(confirm) {
                        case .publish: PublishAnswer(publish: true)
                        case .stopped: PublishAnswer(publish: false, reason: "the job was stopped")
                        case .unconfirmed(let reason): PublishAnswer(publish: false, reason: reason)
                        }
                    let data = (try? JSONCoding.lineEncoder.encode(answer)) ?? Data("{}".utf8)
                    toChild.write(data + Data("\n".utf8))
                case nil:
                    break
                }
            }
            ended.leave()
        }
        ended.enter()
        startThread(named: "reel-child-log") {
            Self.forEachLine(of: child.errors) { line in
                // The child logs what its level lets through (warnings and worse unless asked): the
                // worker's stderr carries it on, one whole line at a time.
                let text = String(decoding: line, as: UTF8.self)
                try? FileHandle.standardError.write(contentsOf: Data((text + "\n").utf8))
                report.withLock { report in
                    report.stderrTail.append(text)
                    if report.stderrTail.count > 5 { report.stderrTail.removeFirst() }
                }
            }
            ended.leave()
        }
        // The child has its own watchdog; this one catches a child that hangs entirely.
        let silence = Duration.seconds(stallTimeout + 15)
        let watch = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                if ContinuousClock.now - report.withLock({ $0.lastLine }) > silence {
                    job.stop(.stalled)
                    child.signal(SIGKILL)
                    return
                }
            }
        }
        await withCheckedContinuation { continuation in ended.notify(queue: .global()) { continuation.resume() } }
        watch.cancel()
        toChild.close()
        // A child killed by a signal could not remove its temporary output (a ladder's: a folder).
        let temporary = TemporaryOutput.url(for: URL(fileURLWithPath: job.lease.spec.output), tag: job.lease.attemptTag)
        if job.lease.spec.writesFolder {
            _ = OutputLock.removeIfAbandoned(temporary.path)
        } else {
            unlink(temporary.path)
        }
        let (result, failure, tail, termination) = report.withLock {
            ($0.result, $0.failure, $0.stderrTail, $0.termination ?? .exited(-1))
        }
        return Self.attempt(
            termination: termination, result: result, failure: failure, stopped: job.stopReason,
            stallTimeout: stallTimeout, lastLog: tail.last, logger: logger, job: job.lease)
    }

    /// How the attempt ended, from how the child ended and what it reported. Whatever the child says,
    /// only the worker's own stop reason (decided by `WorkerPool`) can end the job as cancelled.
    static func attempt(
        termination: SpawnedProcess.Termination, result: JobResult?, failure: JobError?,
        stopped: RunningJob.StopReason?, stallTimeout: TimeInterval, lastLog: String?, logger: Logger, job: Lease
    ) -> ExportAttempt {
        if stopped == .stalled {
            return .failed(
                JobError(
                    code: .stalled, message: "the export process went silent for \(Int(stallTimeout)) s and was killed",
                    retryable: true))
        }
        if termination == .exited(0), let result { return .completed(result) }
        // Stopped by the worker (its reason decides), or by a stop signal that someone else sent: the
        // child reports that with its own status, or died of it before it could listen.
        if stopped != nil || termination == .exited(ChildRunner.interruptedStatus) { return .interrupted }
        if case .signalled(let signal) = termination, [SIGTERM, SIGINT, SIGHUP].contains(signal) {
            return .interrupted
        }
        if case .signalled(let signal) = termination {
            let name = String(cString: strsignal(signal))
            logger.error("export process crashed", metadata: ["job": "\(job.id)", "signal": "\(signal)"])
            return .failed(
                JobError(
                    code: .workerCrashed, message: "the export process died from signal \(signal) (\(name))",
                    retryable: true))
        }
        if let failure { return .failed(failure) }
        return .failed(
            JobError(
                code: .internal, message: "the export process ended (\(termination)): \(lastLog ?? "no message")",
                retryable: false))
    }

    /// Calls `body` with each line read from `handle` until end of file.
    private static func forEachLine(of handle: FileHandle, _ body: (Data) -> Void) {
        var buffer = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                body(Data(buffer[buffer.startIndex..<newline]))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
        }
        if !buffer.isEmpty { body(buffer) }
    }
}
