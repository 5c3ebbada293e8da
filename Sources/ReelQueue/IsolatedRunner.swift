import Foundation
import Logging
import ReelExport
import Synchronization

/// How `reel work --isolate` starts an export in a child process.
public struct Isolation: Sendable {
    /// The `reel` executable.
    public var executable: String
    /// Arguments every child gets (limits, presets folder).
    public var arguments: [String]

    public init(executable: String, arguments: [String]) {
        self.executable = executable
        self.arguments = arguments
    }
}

/// Something running a job that shutdown can stop.
protocol JobHandle: Sendable {
    func stop()
}

extension ExportSession: JobHandle {
    func stop() { cancelExport() }
}

/// Runs one claimed job as a child `reel export --json` process, so a crash inside a codec takes down
/// only that job. The worker keeps the claim (and its lock), turns the child's JSON lines into status
/// updates, forwards cancel requests as SIGTERM, and kills a child that goes silent.
struct IsolatedRunner: Sendable {
    let store: SpoolStore
    let isolation: Isolation
    let stallTimeout: TimeInterval
    let logger = Logger(label: "reel.worker")

    /// Why the worker itself stopped the child, if it did.
    enum Stop: Sendable { case none, cancelled, handedBack, stalled }

    final class Child: JobHandle {
        let process: Process
        let stopReason = Mutex(Stop.none)
        init(process: Process) { self.process = process }
        func stop() { terminate(.handedBack) }
        func terminate(_ reason: Stop) {
            let first = stopReason.withLock { current -> Bool in
                guard current == .none else { return false }
                current = reason
                return true
            }
            guard first, process.isRunning else { return }
            kill(process.processIdentifier, reason == .stalled ? SIGKILL : SIGTERM)
            let pid = process.processIdentifier
            // A child that does not stop within 5 s is killed.
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { [process] in
                if process.isRunning { kill(pid, SIGKILL) }
            }
        }
    }

    func arguments(for spec: JobSpec, threads: Int) -> [String] {
        var arguments = [
            "export", spec.asset, "--preset", spec.preset, "--type", spec.outputType.rawValue, "-o", spec.output,
            "--json", "--die-with-parent", "--stall-timeout", String(stallTimeout), "--metadata",
            spec.metadata.rawValue,
        ]
        if let range = spec.timeRange { arguments += ["--time-range", range.description] }
        if !spec.optimizeForNetwork { arguments.append("--no-network-optimization") }
        if spec.forceTranscode { arguments.append("--force-transcode") }
        if threads > 0 { arguments += ["--threads", String(threads)] }
        return arguments + isolation.arguments
    }

    func run(
        _ claim: Claim, threads: Int, register: (JobHandle?) -> Void, handBack: @escaping @Sendable () -> Bool
    ) {
        let outcome = execute(claim, threads: threads, register: register, handBack: handBack)
        do {
            try store.finish(claim, outcome)
        } catch {
            logger.error("cannot record the outcome", metadata: ["job": "\(claim.id)", "error": "\(error)"])
        }
    }

    private func execute(
        _ claim: Claim, threads: Int, register: (JobHandle?) -> Void, handBack: @escaping @Sendable () -> Bool
    ) -> JobOutcome {
        if store.cancelRequested(claim.id) { return .cancelled }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: isolation.executable)
        process.arguments = arguments(for: claim.spec, threads: threads)
        // Swift's crash backtracer would keep a crashed child alive while it symbolicates (seconds to
        // minutes); the worker records the signal instead.
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return .failed(
                JobError(code: "internal", message: "cannot start \(isolation.executable): \(error)", retryable: true))
        }
        let child = Child(process: process)
        register(child)
        defer { register(nil) }

        // Collect stderr on its own thread so a chatty child cannot block on a full pipe.
        let stderrText = Mutex("")
        let stderrDone = DispatchSemaphore(value: 0)
        Thread {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            stderrText.withLock { $0 = String(decoding: data, as: UTF8.self) }
            stderrDone.signal()
        }.start()

        // The watcher forwards cancel requests and shutdown, and kills a child that goes silent.
        let lastLine = Mutex(Date())
        let finished = CancellationWatch()
        let ticket = claim.ticket
        let store = store
        let stallTimeout = stallTimeout
        Thread {
            while !finished.finished {
                if store.cancelRequested(ticket.id) { child.terminate(.cancelled) }
                if handBack() { child.terminate(.handedBack) }
                // The child has its own watchdog; this one catches a child that hangs entirely.
                if Date().timeIntervalSince(lastLine.withLock { $0 }) > stallTimeout + 15 { child.terminate(.stalled) }
                usleep(200_000)
            }
        }.start()
        defer { finished.finish() }

        var result: JobResult?
        var failure: JobError?
        var lastWrite = Date.distantPast
        var buffer = Data()
        let handle = output.fileHandleForReading
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                lastLine.withLock { $0 = Date() }
                guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                switch object["event"] as? String {
                case "progress":
                    guard Date().timeIntervalSince(lastWrite) >= 0.25 else { continue }
                    lastWrite = Date()
                    let owned =
                        (try? store.update(
                            ticket, progress: object["progress"] as? Double ?? 0,
                            phase: object["phase"] as? String ?? "transcoding",
                            fps: object["fps"] as? Double, eta: object["etaSeconds"] as? Double)) ?? true
                    if !owned { child.terminate(.cancelled) }
                case "completed":
                    if let summary = object["result"], let data = try? JSONSerialization.data(withJSONObject: summary) {
                        result = try? JSONDecoder().decode(JobResult.self, from: data)
                    }
                case "failed":
                    if let error = object["error"] as? [String: Any] {
                        failure = JobError(
                            code: error["code"] as? String ?? "internal",
                            message: error["message"] as? String ?? "export failed",
                            retryable: error["retryable"] as? Bool ?? false)
                    }
                default:
                    continue
                }
            }
        }
        process.waitUntilExit()
        stderrDone.wait()
        // A child killed by a signal could not remove its temporary output.
        store.removeTemporaryOutputs(of: claim.spec)
        let reason = child.stopReason.withLock { $0 }
        switch reason {
        case .handedBack: return .handBack
        case .cancelled: return .cancelled
        case .stalled:
            return .failed(
                JobError(
                    code: "stalled",
                    message: "the export process went silent for \(Int(stallTimeout)) s and was killed", retryable: true
                ))
        case .none: break
        }
        if process.terminationReason == .uncaughtSignal {
            let signal = process.terminationStatus
            let name = String(cString: strsignal(signal))
            logger.error("export process crashed", metadata: ["job": "\(claim.id)", "signal": "\(signal)"])
            return .failed(
                JobError(
                    code: "worker-crashed", message: "the export process died from signal \(signal) (\(name))",
                    retryable: true))
        }
        if process.terminationStatus == 0, let result { return .completed(result) }
        if let failure { return failure.code == "cancelled" ? .cancelled : .failed(failure) }
        let text = stderrText.withLock { $0 }.split(separator: "\n").last.map(String.init) ?? "no message"
        return .failed(
            JobError(
                code: "internal",
                message: "the export process exited with status \(process.terminationStatus): \(text)", retryable: false
            ))
    }
}
