import Foundation
import ReelExport

/// Where jobs live: the one seam between the queue's workers and its storage.
///
/// Two stores keep this contract: the spool directory (one machine, the embedded default) and a
/// database for a fleet. Workers, the CLI and tests speak only to this protocol, so a store plugs in
/// without touching them, and one contract test suite runs against every store.
///
/// Guarantees every store gives:
/// - `submit` is atomic; an idempotency key returns the existing job instead of adding one.
/// - `claim` hands a waiting job to exactly one worker, the most urgent first (higher priority, then
///   older), and counts the attempt.
/// - Every write a worker makes for a job (`renew`, `finish`) is fenced on its `Lease`: once the lease
///   is lost (the store gave the job to someone else), the write changes nothing.
/// - A job whose worker died is found by `rescueExpired` and queued again, or failed once its attempts
///   are used up, within a bound the store documents.
public protocol JobStore: Sendable {
    /// Where the jobs are, for logs and errors (`spool /var/spool/reel`).
    var location: String { get }

    /// How often a worker renews a running job's lease (and reports its progress). It also bounds how
    /// long a cancel takes to reach a running job when the store has no faster way.
    var renewInterval: Duration { get }

    /// How long a lease lasts without renewal, by the store's clock; nil when it lasts exactly as long
    /// as the worker process (a lock the kernel drops when it dies). A worker that has not managed to
    /// renew for this long must stop its job by itself: someone else may own it by now.
    var leaseDuration: Duration? { get }

    // MARK: Clients

    /// Adds a job, or returns the existing one when its idempotency key was seen before with the
    /// same request. Throws `QueueError` (`.conflict`) when the key names a job with a different
    /// request (naming the job and the fields that differ), or when a waiting or running job already
    /// writes to the same output path (naming that job).
    func submit(_ spec: JobSpec) async throws -> Submission

    /// The status of one job, or nil when there is no such job. An exporting job whose worker is gone
    /// (not yet rescued) has `orphaned` set.
    func status(_ id: String) async throws -> JobStatus?

    /// Every job (or those in one state), oldest first, with `orphaned` set as `status` sets it.
    func list(state: JobState?) async throws -> [JobStatus]

    /// Cancels a job: a waiting job never starts; a running one is asked to stop.
    func cancel(_ id: String) async throws -> CancelResult

    /// Puts a failed or cancelled job back in the queue with a fresh set of attempts.
    /// Throws `QueueError` when there is no such job or it is not failed or cancelled.
    func retry(_ id: String) async throws -> JobStatus

    /// Deletes jobs that ended (in one of `states`) before `cutoff`, with everything the store keeps
    /// for them; their idempotency keys become free. Returns how many were deleted.
    @discardableResult
    func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int

    // MARK: Workers

    /// Atomically takes the most urgent waiting job, or returns nil when none is ready.
    func claim(worker: String) async throws -> Lease?

    /// Renews the lease of a running job and records its progress (nil: nothing new to record).
    /// Tells the worker whether to go on, stop because someone asked, or stop because the job is no
    /// longer its own.
    func renew(_ lease: Lease, progress: JobProgress?) async throws -> LeaseState

    /// Returns when a worker should renew `lease` next: after `renewInterval`, or sooner when the store
    /// learns that the job changed (a cancel), so a cancel can reach a running job before a whole
    /// interval has passed. (Default: sleeps `renewInterval`.)
    func waitToRenew(_ lease: Lease) async

    /// Records how a claimed job ended and gives up the lease. Returns false (and changes nothing)
    /// when the lease was lost.
    @discardableResult
    func finish(_ lease: Lease, _ outcome: JobOutcome) async throws -> Bool

    /// Finds jobs whose worker died or whose lease expired and queues them again (or fails them once
    /// their attempts are used up, or cancels them if a cancel was asked). Returns how many.
    @discardableResult
    func rescueExpired() async throws -> Int

    /// What is left to do, for workers deciding whether to wait or (with `--drain`) to stop.
    func pendingWork() async throws -> PendingWork

    /// Returns when a job may have become claimable, or after `timeout`.
    func waitForWork(timeout: Duration) async

    /// Returns after `timeout`, or sooner when the store learns that it may be reachable again (a
    /// worker waits with this between attempts to reach a store that is away). (Default: sleeps.)
    func waitForRecovery(timeout: Duration) async

    /// Where the job's status file (the polled interface) is written, if this store writes one.
    func statusFile(for id: String) -> String?
}

extension JobStore {
    public func waitToRenew(_ lease: Lease) async {
        try? await Task.sleep(for: renewInterval)
    }

    public func waitForRecovery(timeout: Duration) async {
        try? await Task.sleep(for: timeout)
    }
}

/// A claimed job. Holding it means holding the job: every write is fenced on it. `Sendable`, so the
/// threads and tasks that run and watch the export may all carry it.
public struct Lease: Sendable, Hashable, CustomStringConvertible {
    public let id: String
    /// Which attempt this is (1 for the first run).
    public let attempt: Int
    /// Unique to this claim: a write carrying an older token is refused.
    public let token: String
    /// Who holds it (`host:pid:slot`).
    public let worker: String
    public let spec: JobSpec

    public init(id: String, attempt: Int, token: String, worker: String, spec: JobSpec) {
        self.id = id
        self.attempt = attempt
        self.token = token
        self.worker = worker
        self.spec = spec
    }

    /// Names this attempt's temporary output, so attempts never share one.
    public var attemptTag: String { "\(id)-\(attempt)" }

    public var description: String { "\(id) attempt \(attempt)" }

    public static func == (a: Lease, b: Lease) -> Bool { a.token == b.token }
    public func hash(into hasher: inout Hasher) { hasher.combine(token) }
}

/// What renewing a lease found.
public enum LeaseState: Sendable, Equatable {
    /// Still ours: go on.
    case held
    /// Still ours, but someone asked to cancel the job: stop it and finish it as cancelled.
    case cancelRequested
    /// No longer ours (the job was rescued and may run elsewhere): stop at once, publish nothing and
    /// record nothing.
    case lost
}

/// A running job's progress, as a heartbeat carries it.
public struct JobProgress: Sendable, Equatable {
    /// 0…1.
    public var fraction: Double
    /// `downloading` (a remote asset), `transcoding` or `finalizing`.
    public var phase: ExportSession.Phase
    public var framesPerSecond: Double?
    public var secondsRemaining: Double?
    /// A ladder's renditions, each on its own; empty for other exports.
    public var renditions: [ExportSession.RenditionProgress]
    /// A cache job's photos done of its total; nil for other jobs.
    public var items: JobItems?

    public init(
        fraction: Double, phase: ExportSession.Phase, framesPerSecond: Double?, secondsRemaining: Double?,
        renditions: [ExportSession.RenditionProgress] = [], items: JobItems? = nil
    ) {
        self.items = items
        self.fraction = fraction
        self.phase = phase
        self.framesPerSecond = framesPerSecond
        self.secondsRemaining = secondsRemaining
        self.renditions = renditions
    }
}

/// How a claimed job ended.
public enum JobOutcome: Sendable, Equatable {
    case completed(JobResult)
    case failed(JobError)
    case cancelled
    /// Stop running it here and put it back in the queue (shutdown); the attempt is not counted.
    case handBack
}

/// What `submit` did.
public struct Submission: Sendable {
    public var status: JobStatus
    /// False when an idempotency key named an existing job, which `status` then describes.
    public var created: Bool

    public init(status: JobStatus, created: Bool) {
        self.status = status
        self.created = created
    }
}

/// What `cancel` did.
public enum CancelResult: Sendable, Equatable {
    /// The job was waiting (or its worker was dead) and is now cancelled.
    case cancelled
    /// The job is running; its worker was asked to stop and will mark it cancelled.
    case requested
    /// The job had already ended in this state.
    case alreadyEnded(JobState)
    case notFound
}

/// What is left to do in a store.
public struct PendingWork: Sendable, Equatable {
    /// A job can be claimed now.
    public var waiting: Bool
    /// When the next job backing off after a failure becomes claimable, if one is.
    public var nextRetry: Date?
    /// Some job is running (on any worker).
    public var running: Bool

    public init(waiting: Bool, nextRetry: Date?, running: Bool) {
        self.waiting = waiting
        self.nextRetry = nextRetry
        self.running = running
    }

    /// Nothing waiting, backing off or running.
    public var isEmpty: Bool { !waiting && nextRetry == nil && !running }
}

/// A queue operation that could not be done, in words a person can act on.
public struct QueueError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable, CaseIterable {
        /// No such job.
        case notFound
        /// The request conflicts with the job's state (retrying a running job, a key reused, …).
        case conflict
        /// The request is malformed (a bad key, a bad id).
        case invalid
        /// The store cannot be read or written (missing spool, permissions, a database away).
        case unavailable
    }
    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
