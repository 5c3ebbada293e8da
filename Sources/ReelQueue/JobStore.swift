import Foundation

/// A job a worker has claimed. Holding it means holding the job: every update is fenced on it, and
/// the claim dies with the process that holds it.
///
/// Not `Sendable`: a claim belongs to the worker thread that made it.
public final class Claim {
    public var id: String { ticket.id }
    public let spec: JobSpec
    /// Which attempt this is (1 for the first run).
    public let attempt: Int
    /// What fences updates; may be handed to other threads (progress reports).
    public let ticket: ClaimTicket
    let lock: FileLock

    init(id: String, spec: JobSpec, attempt: Int, token: String, lock: FileLock) {
        self.spec = spec
        self.attempt = attempt
        self.ticket = ClaimTicket(id: id, token: token)
        self.lock = lock
    }
}

/// The part of a claim that fences updates: the job id and a token unique to this claim, written in
/// the job's running marker. An update whose token no longer matches is refused.
public struct ClaimTicket: Sendable, Equatable {
    public let id: String
    let token: String
}

/// How a claimed job ended.
public enum JobOutcome: Sendable {
    case completed(JobResult)
    case failed(JobError)
    case cancelled
    /// Stop running it here and put it back in the queue (shutdown); the attempt is not counted.
    case handBack
}

/// Where jobs live. Small on purpose: a fleet backend (a database, a broker) implements these calls,
/// and everything else — submit with keys, retries, listing — is written on top of them.
public protocol JobStore: Sendable {
    /// Adds a job, or returns the existing one when its idempotency key was seen before.
    func submit(_ spec: JobSpec) throws -> (status: JobStatus, created: Bool)
    /// Atomically takes the most urgent waiting job, or nil when none is ready.
    func claim(worker: String) throws -> Claim?
    /// Records progress of a claimed job; false when the claim was lost (stop working on it).
    func update(_ ticket: ClaimTicket, progress: Double, phase: String, fps: Double?, eta: Double?) throws -> Bool
    /// Records how a claimed job ended and gives up the claim.
    func finish(_ claim: Claim, _ outcome: JobOutcome) throws
    /// The status of one job.
    func status(_ id: String) throws -> JobStatus?
}
