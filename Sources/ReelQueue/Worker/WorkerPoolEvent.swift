import Foundation

/// What a worker pool reports while it runs, for a host's metrics, status page or readiness signal.
///
/// Set ``WorkerPool/Configuration/onEvent`` to receive them. The handler is called synchronously on
/// the pool's tasks: keep it short and never block in it.
public enum WorkerPoolEvent: Sendable {
    /// The pool changed state: ``WorkerPool/State/running`` once it takes jobs (its store is open and
    /// the first rescue has run), then ``WorkerPool/State/draining``, ``WorkerPool/State/cancelling``
    /// and ``WorkerPool/State/stopped`` as it shuts down.
    case stateChanged(WorkerPool.State)
    /// An attempt started: the job was claimed and its export is starting. `submittedAt` is when the
    /// job was submitted, known for first attempts.
    case started(Lease, submittedAt: Date?)
    /// An attempt ended with `outcome` after `elapsed` (wall time of the attempt). A job whose lease
    /// was lost reports nothing: its new owner does.
    case ended(Lease, JobOutcome, elapsed: Duration)
}

/// A job a worker pool is running now, as ``WorkerPool/runningJobs()`` shows it.
public struct RunningJobInfo: Sendable {
    /// The job, its attempt and its spec.
    public var lease: Lease
    /// When this attempt started.
    public var startedAt: Date
    /// The latest progress the export reported (nil before the first report).
    public var progress: JobProgress?
    /// Codec threads the job was given (0: the codecs choose).
    public var threads: Int

    /// A running job's snapshot.
    public init(lease: Lease, startedAt: Date, progress: JobProgress?, threads: Int) {
        self.lease = lease
        self.startedAt = startedAt
        self.progress = progress
        self.threads = threads
    }
}
