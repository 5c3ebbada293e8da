import Foundation
import ReelExport
import Synchronization

/// Something running a job's export that can be told to stop (an export session, a child process).
protocol JobHandle: Sendable {
    func stop()
}

extension ExportSession: JobHandle {
    func stop() { cancelExport() }
}

/// A remote asset's download, stopped by cancelling its task.
struct DownloadHandle<Success: Sendable, Failure: Error>: JobHandle {
    let task: Task<Success, Failure>
    func stop() { task.cancel() }
}

/// A job a worker pool is running: the lease, the latest progress (handed from the export's thread to
/// the heartbeat without any I/O on the export's thread), and why it was stopped, if it was.
final class RunningJob: Sendable {
    /// Why the worker stopped the export. When several apply, the strongest wins: a lost lease, then a
    /// lease that ran out while the store was unreachable, then a user's cancel, then a stall, then a
    /// shutdown's hand-back.
    enum StopReason: Int, Sendable, Comparable {
        /// The worker is shutting down: the job goes back to the queue, its attempt not counted.
        case handedBack
        /// No progress for the stall timeout.
        case stalled
        /// Someone cancelled the job (the store said so).
        case cancelled
        /// The store could not be reached for a whole lease: another worker may be given the job, so
        /// this one stops and, once the store answers, hands it back if it is still its own.
        case expired
        /// The store gave the job to someone else: nothing more is recorded.
        case lost
        static func < (a: StopReason, b: StopReason) -> Bool { a.rawValue < b.rawValue }
    }

    private struct State {
        var progress: JobProgress?
        var progressIsNew = false
        var stop: StopReason?
        var handle: (any JobHandle)?
        var finished = false
        /// The spec to export when it differs from the lease's (a library asset that moved).
        var spec: JobSpec?
        var ends: [@Sendable () -> Void] = []
    }

    let lease: Lease
    /// When this attempt started, and the codec threads it was given (for `WorkerPool.runningJobs()`).
    let startedAt = Date()
    let threads: Int
    /// When the claim that gave this lease was sent (the lease cannot have started earlier).
    let claimSent: ContinuousClock.Instant
    private let state = Mutex(State())

    init(lease: Lease, threads: Int = 0, claimSent: ContinuousClock.Instant = .now) {
        self.lease = lease
        self.threads = threads
        self.claimSent = claimSent
    }

    /// Records progress (called on the export's thread; cheap).
    func report(_ progress: JobProgress) {
        state.withLock {
            $0.progress = progress
            $0.progressIsNew = true
        }
    }

    /// What to export: the lease's spec, unless the worker found the library asset it names at a new
    /// path (`export(_:)`). The output and everything else are the lease's.
    var spec: JobSpec { state.withLock { $0.spec } ?? lease.spec }

    /// Exports `spec` instead of the lease's (set before the export starts).
    func export(_ spec: JobSpec) { state.withLock { $0.spec = spec } }

    /// Progress reported since the last call, if any.
    func takeProgress() -> JobProgress? {
        state.withLock { state in
            guard state.progressIsNew else { return nil }
            state.progressIsNew = false
            return state.progress
        }
    }

    /// The latest progress reported, whether or not it was taken.
    var latestProgress: JobProgress? { state.withLock { $0.progress } }

    /// Stops the export (now, or as soon as it has a handle) for `reason`.
    func stop(_ reason: StopReason) {
        let handle = state.withLock { state -> (any JobHandle)? in
            if let current = state.stop, current >= reason { return nil }
            state.stop = reason
            return state.finished ? nil : state.handle
        }
        handle?.stop()
    }

    var stopReason: StopReason? { state.withLock { $0.stop } }

    /// Gives the job the thing that runs its export; a job stopped before that is stopped at once.
    func attach(_ handle: any JobHandle) {
        let stopNow = state.withLock { state -> Bool in
            state.handle = handle
            return state.stop != nil
        }
        if stopNow { handle.stop() }
    }

    /// The export has ended; nothing is stopped any more, and what waited for the end runs.
    func markFinished() {
        let ends = state.withLock { state in
            state.finished = true
            state.handle = nil
            defer { state.ends = [] }
            return state.ends
        }
        for end in ends { end() }
    }

    /// Runs `body` once the export has ended (a temporary download removed).
    func onEnd(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.finished { return true }
            state.ends.append(body)
            return false
        }
        if now { body() }
    }

    var isFinished: Bool { state.withLock { $0.finished } }
}

/// How an export attempt ended, as the export saw it. What happens to the job also depends on why the
/// worker stopped it, if it did (`RunningJob.StopReason`): only the worker's own reasons end a job as
/// cancelled, never what the export reports.
enum ExportAttempt: Sendable {
    case completed(JobResult)
    case failed(JobError)
    /// Stopped from outside without the worker asking (a signal to the export process alone, such as
    /// systemd's default `KillMode` sends every process of a stopping service): a stop, not a
    /// failure, so the job is handed back and the attempt not counted.
    case interrupted
}

/// Runs a claimed job's export, in this process or in a child process.
protocol ExportRunner: Sendable {
    /// Runs the export of `job.lease.spec` with `threads` codec threads (0: the codecs choose), into
    /// the attempt's own temporary file. Progress goes to `job.report`; `job.stop` ends it early.
    /// Before the finished file is renamed into place, `confirm` must say the lease is still held:
    /// only the lease holder publishes.
    func run(_ job: RunningJob, threads: Int, confirm: @escaping @Sendable () async -> PublishVerdict) async
        -> ExportAttempt
}

/// Whether a finished export may be renamed into place.
enum PublishVerdict: Sendable, Equatable {
    case publish
    /// The job was cancelled or its lease lost meanwhile (the job's stop reason says which).
    case stopped
    /// The lease could not be confirmed (the store is unreachable); the gate tries again until the
    /// lease has certainly expired.
    case unconfirmed(String)

    /// What the export's publish gate throws for this verdict (nothing to publish).
    var error: ExportError? {
        switch self {
        case .publish: nil
        case .stopped: ExportError(.cancelled, "the export was stopped before its output was published")
        case .unconfirmed(let reason):
            ExportError(.outputFailed, "the job's lease could not be confirmed before publishing: \(reason)")
        }
    }

    /// Runs an async check from the export's own thread (a publish gate is synchronous): blocks that
    /// thread, never a thread of Swift's cooperative pool.
    static func blocking(_ check: @escaping @Sendable () async -> PublishVerdict) -> PublishVerdict {
        let box = Mutex(PublishVerdict.unconfirmed("no answer"))
        let done = DispatchSemaphore(value: 0)
        Task {
            let verdict = await check()
            box.withLock { $0 = verdict }
            done.signal()
        }
        done.wait()
        return box.withLock { $0 }
    }

    /// `check`'s verdict if it comes within `limit`; otherwise `.unconfirmed`, and `check` is cancelled
    /// and its answer, whenever it comes, ignored. A store that stops answering (a partition no error
    /// reports) cannot hold a finished export at its publish gate past its lease.
    static func within(_ limit: Duration, _ check: @escaping @Sendable () async -> PublishVerdict) async
        -> PublishVerdict
    {
        do {
            return try await Deadline.run(within: limit) { await check() }
        } catch {
            return .unconfirmed("the store did not answer within \(limit)")
        }
    }
}

extension JobProgress {
    init(_ progress: ExportSession.Progress) {
        self.init(
            fraction: progress.fraction, phase: progress.phase, framesPerSecond: progress.framesPerSecond,
            secondsRemaining: progress.secondsRemaining, renditions: progress.renditions)
    }
}
