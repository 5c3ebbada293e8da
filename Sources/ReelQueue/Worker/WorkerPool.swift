import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelSystem
import Synchronization

/// Runs queued jobs from any `JobStore`: one dispatcher claims jobs while the core budget has room,
/// each claimed job runs as its own task (its export on a thread of its own or in a child process),
/// and a heartbeat per job renews its lease, reports its progress and stops it when it is cancelled
/// or its lease is lost.
///
/// A service with an explicit state: `running` → (`draining` on the first stop: no new claims, running
/// jobs finish) → (`cancelling` on the second: running jobs are stopped and handed back) → `stopped`.
public final class WorkerPool: Sendable {
    public struct Configuration: Sendable {
        /// Jobs at once.
        public var jobs: Int
        /// Return once nothing is waiting or running in the store.
        public var drain: Bool
        public var presets: PresetLibrary
        public var limits: InputLimits
        /// How often jobs of dead workers (or with expired leases) are looked for.
        public var recoveryInterval: TimeInterval
        /// Seconds without progress before a job fails as `stalled`.
        public var stallTimeout: TimeInterval
        /// Run each export in a child process (nil: in this process).
        public var isolation: Isolation?
        /// Delete jobs that ended longer ago than this (checked every minute); nil keeps them.
        public var keepFinished: TimeInterval?
        /// Receives the pool's state changes and each attempt's start and end (metrics, a status page).
        public var onEvent: (@Sendable (WorkerPoolEvent) -> Void)?
        /// The metadata policy of jobs whose spec did not choose one (`JobSpec.metadataChosen`).
        public var metadataDefault = MetadataPolicy.keep
        /// Cores the jobs share (nil: `StageThreads.availableCores()`, the affinity mask under any
        /// cgroup CPU quota); tests set it to see the shares a given machine would get.
        public var cores: Int?
        /// The photo library `library:<id>` jobs are checked against when they start (an identifier
        /// that now names other bytes, or none, fails `asset-changed`) and `saveToLibrary` jobs save
        /// their output to. Without one, such jobs are checked against the file they resolved to at
        /// submit, and a save fails the job (`save-failed`, not retryable).
        public var library: (any AssetLibrary)?
        /// What runs cache jobs (`JobSpec.cache`); without one they fail, retryable, for a worker that
        /// has one.
        public var photoCache: (any PhotoCacheRunner)?
        /// What downloads a job's remote asset (`JobSpec.remote`) under this worker's network policy;
        /// without one such jobs fail (`network-access-required`, not retryable).
        public var remote: (any RemoteAssetFetcher)?

        public init(
            jobs: Int = WorkerPool.defaultJobs, drain: Bool = false, presets: PresetLibrary = .shipped,
            limits: InputLimits = Asset.defaultLimits, recoveryInterval: TimeInterval = 2,
            stallTimeout: TimeInterval = 120, isolation: Isolation? = nil, keepFinished: TimeInterval? = nil
        ) {
            self.keepFinished = keepFinished
            self.isolation = isolation
            self.stallTimeout = stallTimeout
            self.jobs = max(1, jobs)
            self.drain = drain
            self.presets = presets
            self.limits = limits
            self.recoveryInterval = recoveryInterval
        }
    }

    /// One worker per core, at most 8. How many threads each job's codecs get is decided per job
    /// (see `CoreBudget`): one each when jobs are waiting, the rest for the job in the last slot, every core
    /// for a video job on its own.
    public static var defaultJobs: Int { max(1, min(8, StageThreads.availableCores())) }

    /// Where the pool is in its life.
    public enum State: Sendable, Equatable {
        /// Not started yet, or started and waiting for its store to answer (not ready).
        case idle
        /// Claiming and running jobs.
        case running
        /// Stopping: no new claims; running jobs finish.
        case draining
        /// Stopping: running jobs are stopped and handed back to the queue.
        case cancelling
        /// `run()` has returned or is about to.
        case stopped
    }

    struct Shared {
        var state = State.idle
        /// `run()` was called (it runs once).
        var started = false
        /// Running jobs by lease token.
        var jobs: [String: RunningJob] = [:]
    }

    let store: any JobStore
    let configuration: Configuration
    let shared = Mutex(Shared())
    let cores: CoreBudget
    let runner: any ExportRunner
    let logger: Logger
    let metrics: WorkerMetrics
    let name = "\(ProcessInfo.processInfo.hostName):\(getpid())"
    /// Where publish receipts are written and read (never on Swift's cooperative pool).
    let io = BlockingIO.shared

    public init(store: any JobStore, configuration: Configuration, logger: Logger = Logger(label: "reel.worker")) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        let presets = configuration.presets
        metrics = WorkerMetrics(presetName: { (try? presets.preset(named: $0.preset))?.name ?? "unknown" })
        // More jobs than cores is the user's call: each then gets a unit of its own.
        cores = CoreBudget(cores: configuration.cores ?? StageThreads.availableCores(), slots: configuration.jobs)
        if let isolation = configuration.isolation {
            runner = IsolatedRunner(
                isolation: isolation, limits: configuration.limits, stallTimeout: configuration.stallTimeout,
                logger: logger, metadataDefault: configuration.metadataDefault)
        } else {
            runner = InProcessRunner(
                presets: configuration.presets, limits: configuration.limits, stallTimeout: configuration.stallTimeout,
                metadataDefault: configuration.metadataDefault)
        }
    }

    /// Runs until stopped (or, draining, until the store has nothing left), then returns once every
    /// running job has finished or been handed back.
    public func run() async {
        let start = shared.withLock { shared -> Bool in
            guard shared.state == .idle, !shared.started else { return false }
            shared.started = true
            return true
        }
        guard start else { return }
        metrics.slots(configuration.jobs)
        metrics.busy(0)
        // Running (ready: systemd's READY=1, `state`) once the store has answered: a worker whose
        // database is away at start waits for it, still `idle` meanwhile, and a stop ends the wait.
        await waitForStore()
        let running = shared.withLock { shared -> Bool in
            guard shared.state == .idle else { return false }
            shared.state = .running
            return true
        }
        if running {
            configuration.onEvent?(.stateChanged(.running))
            await rescue()
            await prune()
            // Logged once the first pass over dead workers' jobs is done: whoever reads it knows a job
            // orphaned from now on waits for the next pass.
            logger.info(
                "worker pool started",
                metadata: ["jobs": .stringConvertible(configuration.jobs), "store": "\(store.location)"])
        }
        let maintenance = Task { [self] in
            var lastPrune = ContinuousClock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(configuration.recoveryInterval))
                if Task.isCancelled { return }
                await rescue()
                if ContinuousClock.now - lastPrune >= .seconds(60) {
                    await prune()
                    lastPrune = .now
                }
            }
        }
        await withDiscardingTaskGroup { jobs in
            // After a failed claim (the store unreachable), the next one waits; a success resets it.
            var claimBackoff = Backoff()
            while isRunning {
                await cores.waitForRoom()
                guard isRunning else { break }
                let lease: Lease?
                let claimSent = ContinuousClock.now
                do {
                    lease = try await store.claim(worker: name)
                    claimBackoff.reset()
                } catch {
                    logger.error(
                        "cannot claim a job",
                        metadata: [
                            "store": "\(store.location)", "error": "\(error)",
                            "retryIn": "\(String(format: "%.2f", claimBackoff.delay / .seconds(1)))",
                        ])
                    await store.waitForRecovery(timeout: claimBackoff.next())
                    continue
                }
                if let lease {
                    var alone = scalesWithCores(lease.spec)
                    if alone { alone = !((try? await store.pendingWork().waiting) ?? true) }
                    let units = cores.take(allFree: alone)
                    let job = RunningJob(
                        lease: lease, threads: cores.threads(holding: units), claimSent: claimSent)
                    register(job)
                    jobs.addTask { [self] in
                        await execute(job, threads: job.threads)
                        unregister(job)
                        cores.release(units)
                    }
                    continue
                }
                let pending = try? await store.pendingWork()
                if configuration.drain, let pending, pending.isEmpty { break }
                // Sleep until a job arrives, a retry falls due, or half a second has passed.
                let untilRetry = pending?.nextRetry.map { max(0.01, $0.timeIntervalSinceNow) } ?? .infinity
                await store.waitForWork(timeout: .seconds(min(0.5, untilRetry)))
            }
        }
        maintenance.cancel()
        shared.withLock { $0.state = .stopped }
        configuration.onEvent?(.stateChanged(.stopped))
        logger.info("worker pool stopped")
    }

    /// First call: stop claiming and let running jobs finish. Second call (or `cancelRunning`): stop
    /// running jobs and hand them back to the queue (their attempt is not counted).
    public func stop(cancelRunning: Bool = false) {
        let (jobs, state, changed) = shared.withLock { shared -> ([RunningJob], State, Bool) in
            let before = shared.state
            switch shared.state {
            case .idle, .running:
                shared.state = cancelRunning ? .cancelling : .draining
            case .draining:
                shared.state = .cancelling
            case .cancelling, .stopped:
                break
            }
            return (shared.state == .cancelling ? Array(shared.jobs.values) : [], shared.state, shared.state != before)
        }
        if state == .draining || state == .cancelling {
            logger.info(state == .draining ? "stopping: finishing running jobs" : "stopping: handing running jobs back")
        }
        if changed { configuration.onEvent?(.stateChanged(state)) }
        for job in jobs { job.stop(.handedBack) }
    }

    private var isRunning: Bool { shared.withLock { $0.state == .running } }

    /// Where the pool is now: `running` while it takes jobs (ready, for a health check).
    public var state: State { shared.withLock { $0.state } }

    /// The jobs running now, with their latest progress, oldest first.
    public func runningJobs() -> [RunningJobInfo] {
        shared.withLock { Array($0.jobs.values) }
            .map {
                RunningJobInfo(
                    lease: $0.lease, startedAt: $0.startedAt, progress: $0.latestProgress, threads: $0.threads)
            }
            .sorted { $0.startedAt < $1.startedAt }
    }

    func register(_ job: RunningJob) {
        let (handBack, busy) = shared.withLock { shared -> (Bool, Int) in
            shared.jobs[job.lease.token] = job
            return (shared.state == .cancelling, shared.jobs.count)
        }
        metrics.busy(busy)
        if handBack { job.stop(.handedBack) }
    }

    func unregister(_ job: RunningJob) {
        let busy = shared.withLock { shared -> Int in
            shared.jobs.removeValue(forKey: job.lease.token)
            return shared.jobs.count
        }
        metrics.busy(busy)
    }

    func rescue() async {
        do {
            try await store.rescueExpired()
        } catch {
            logger.error("cannot look for jobs of dead workers", metadata: ["error": "\(error)"])
        }
    }

    /// Returns once the store answers (or the pool is stopped), trying again with backoff.
    func waitForStore() async {
        var backoff = Backoff()
        while state == .idle {
            do {
                try await store.checkReachable()
                return
            } catch {
                logger.error(
                    "cannot reach the store; not ready",
                    metadata: [
                        "store": "\(store.location)", "error": "\(error)",
                        "retryIn": "\(String(format: "%.2f", backoff.delay / .seconds(1)))",
                    ])
                await store.waitForRecovery(timeout: backoff.next())
            }
        }
    }

    /// Deletes finished jobs past `keepFinished`, if set.
    func prune() async {
        guard let keep = configuration.keepFinished else { return }
        do {
            try await store.prune(
                finishedBefore: Date(timeIntervalSinceNow: -keep), states: [.completed, .failed, .cancelled])
        } catch {
            logger.error("cannot prune finished jobs", metadata: ["error": "\(error)"])
        }
    }

    /// Whether more codec threads would speed the job up: a video preset (it may still turn out to be
    /// a smart passthrough, which leaves the extra units idle for that short while). Audio encoders and
    /// copies are single-threaded.
    func scalesWithCores(_ spec: JobSpec) -> Bool {
        guard let preset = try? configuration.presets.preset(named: spec.preset) else { return false }
        return preset.kind == .video && !spec.outputType.isAudioOnly
    }

}

/// When the last renewal of a job's lease that got through was sent, shared by its heartbeat and
/// its self-fencing watch.
final class LastRenewal: Sendable {
    let last: Mutex<ContinuousClock.Instant>

    init(_ instant: ContinuousClock.Instant) { last = Mutex(instant) }

    var instant: ContinuousClock.Instant { last.withLock { $0 } }

    func advance(to instant: ContinuousClock.Instant) {
        last.withLock { $0 = max($0, instant) }
    }
}
