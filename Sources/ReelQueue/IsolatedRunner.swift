import Foundation
import Logging
import ReelExport
import ReelSpawn
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
/// lines; stopping the job sends it SIGTERM (SIGKILL 5 s later), and a child that goes silent past
/// its own watchdog is killed.
struct IsolatedRunner: ExportRunner {
    let isolation: Isolation
    let limits: InputLimits
    let stallTimeout: TimeInterval
    let logger: Logger
    /// The metadata policy of jobs that did not choose one: the child gets the spec with it decided.
    var metadataDefault = MetadataPolicy.keep

    /// The child process, as the job's stop handle.
    final class Child: JobHandle {
        let pid: Int32
        init(pid: Int32) { self.pid = pid }
        func stop() {
            kill(pid, SIGTERM)
            // A child that does not stop within 5 s is killed. (Its pid cannot be reused meanwhile: the
            // runner reaps it only after this job's end, and a reaped pid makes kill a no-op here.)
            let pid = pid
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { kill(pid, SIGKILL) }
        }
    }

    /// What the child reported.
    private struct Report {
        var result: JobResult?
        var failure: JobError?
        var lastLine = ContinuousClock.now
        var stderrTail: [String] = []
        var verdict: PublishVerdict?
        var termination: SpawnedProcess.Termination?
    }

    func run(_ job: RunningJob, threads: Int, confirm: @escaping @Sendable () async -> PublishVerdict) async
        -> ExportAttempt
    {
        var spec = job.lease.spec
        spec.metadata = spec.metadata(workerDefault: metadataDefault)
        spec.metadataChosen = true
        let request = ChildRequest(
            spec: spec, threads: threads, stallTimeout: stallTimeout, limits: limits,
            presetsFolder: isolation.presetsFolder, verbose: isolation.verbose, parent: getpid(),
            attemptTag: job.lease.attemptTag)
        let requestLine: Data
        do {
            requestLine = try JSONCoding.lineEncoder.encode(request) + Data("\n".utf8)
        } catch {
            return .failed(
                JobError(code: "internal", message: "cannot encode the job for its process: \(error)", retryable: false)
            )
        }
        // Swift's crash backtracer would keep a crashed child alive while it symbolicates (seconds to
        // minutes); the worker records the signal instead.
        var environment = ProcessInfo.processInfo.environment.merging(isolation.environment) { $1 }
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let child: SpawnedProcess
        do {
            child = try SpawnedProcess.start(
                isolation.executable, arguments: ["_run-job"], environment: environment, withInput: true)
        } catch {
            return .failed(JobError(code: "internal", message: error.description, retryable: true))
        }
        let ended = DispatchGroup()
        // Stdin stays open: the child asks before it publishes, and the answer goes there.
        let toChild = child.input!
        try? toChild.write(contentsOf: requestLine)
        job.attach(Child(pid: child.pid))

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
                switch ExportEvent(jsonLine: line) {
                case .progress(let progress)?:
                    job.report(
                        JobProgress(
                            fraction: progress.progress, phase: progress.phase, framesPerSecond: progress.fps,
                            secondsRemaining: progress.etaSeconds))
                case .completed(let completion)?:
                    report.withLock { $0.result = JobResult(completion.result) }
                case .failed(let failure)?:
                    report.withLock { $0.failure = JobError(failure) }
                case nil:
                    guard (try? JSONCoding.decoder.decode(PublishRequest.self, from: line)) != nil else { break }
                    // The child's output is complete: only the lease holder publishes it. (The child
                    // waits for the answer, so this reader may wait for it too.)
                    let verdict = PublishVerdict.blocking(confirm)
                    report.withLock { $0.verdict = verdict }
                    let answer: PublishAnswer
                    switch verdict {
                    case .publish: answer = PublishAnswer(publish: true)
                    case .stopped: answer = PublishAnswer(publish: false, reason: "the job was stopped")
                    case .unconfirmed(let reason): answer = PublishAnswer(publish: false, reason: reason)
                    }
                    let data = (try? JSONCoding.lineEncoder.encode(answer)) ?? Data("{}".utf8)
                    try? toChild.write(contentsOf: data + Data("\n".utf8))
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
        let pid = child.pid
        let watch = Task {
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(1))
                if ContinuousClock.now - report.withLock({ $0.lastLine }) > silence {
                    job.stop(.stalled)
                    kill(pid, SIGKILL)
                    return
                }
            }
        }
        await withCheckedContinuation { continuation in ended.notify(queue: .global()) { continuation.resume() } }
        watch.cancel()
        try? toChild.close()
        // A child killed by a signal could not remove its temporary output.
        unlink(TemporaryOutput.url(for: URL(fileURLWithPath: job.lease.spec.output), tag: job.lease.attemptTag).path)
        let (result, failure, tail, verdict, termination) = report.withLock {
            ($0.result, $0.failure, $0.stderrTail, $0.verdict, $0.termination ?? .exited(-1))
        }
        let reason = job.stopReason
        if case .unconfirmed = verdict, let error = verdict?.error { return .failed(JobError(error)) }
        if reason == .stalled {
            return .failed(
                JobError(
                    code: "stalled",
                    message: "the export process went silent for \(Int(stallTimeout)) s and was killed",
                    retryable: true))
        }
        if case .signalled(let signal) = termination, reason == nil {
            let name = String(cString: strsignal(signal))
            logger.error("export process crashed", metadata: ["job": "\(job.lease.id)", "signal": "\(signal)"])
            return .failed(
                JobError(
                    code: "worker-crashed", message: "the export process died from signal \(signal) (\(name))",
                    retryable: true))
        }
        if termination == .exited(0), let result { return .completed(result) }
        if let failure { return .failed(failure) }
        if reason != nil {
            return .failed(JobError(code: "cancelled", message: "the export was stopped", retryable: false))
        }
        let last = tail.last ?? "no message"
        return .failed(
            JobError(
                code: "internal",
                message: "the export process ended (\(termination)): \(last)",
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
