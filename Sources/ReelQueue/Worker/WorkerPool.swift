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

    private struct Shared {
        var state = State.idle
        /// `run()` was called (it runs once).
        var started = false
        /// Running jobs by lease token.
        var jobs: [String: RunningJob] = [:]
    }

    private let store: any JobStore
    private let configuration: Configuration
    private let shared = Mutex(Shared())
    private let cores: CoreBudget
    private let runner: any ExportRunner
    private let logger: Logger
    private let metrics: WorkerMetrics
    private let name = "\(ProcessInfo.processInfo.hostName):\(getpid())"
    /// Where publish receipts are written and read (never on Swift's cooperative pool).
    private let io = BlockingIO.shared

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

    private func register(_ job: RunningJob) {
        let (handBack, busy) = shared.withLock { shared -> (Bool, Int) in
            shared.jobs[job.lease.token] = job
            return (shared.state == .cancelling, shared.jobs.count)
        }
        metrics.busy(busy)
        if handBack { job.stop(.handedBack) }
    }

    private func unregister(_ job: RunningJob) {
        let busy = shared.withLock { shared -> Int in
            shared.jobs.removeValue(forKey: job.lease.token)
            return shared.jobs.count
        }
        metrics.busy(busy)
    }

    private func rescue() async {
        do {
            try await store.rescueExpired()
        } catch {
            logger.error("cannot look for jobs of dead workers", metadata: ["error": "\(error)"])
        }
    }

    /// Returns once the store answers (or the pool is stopped), trying again with backoff.
    private func waitForStore() async {
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
    private func prune() async {
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
    private func scalesWithCores(_ spec: JobSpec) -> Bool {
        guard let preset = try? configuration.presets.preset(named: spec.preset) else { return false }
        return preset.kind == .video && !spec.outputType.isAudioOnly
    }

    // MARK: - One job

    /// Runs one claimed job with its heartbeat, then records the outcome on its lease.
    private func execute(_ job: RunningJob, threads: Int) async {
        let began = ContinuousClock.now
        // Queue wait (submit to start) is measured for first attempts only.
        let submittedAt = job.lease.attempt == 1 ? try? await store.status(job.lease.id)?.createdAt : nil
        metrics.started(job.lease, submittedAt: submittedAt, now: job.startedAt)
        configuration.onEvent?(.started(job.lease, submittedAt: submittedAt))
        let lease = job.lease
        var attempt: ExportAttempt
        if let adopted = await adoptPublishedOutput(of: lease) {
            attempt = .completed(adopted)
        } else if let refusal = await checkLibrarySource(of: job) {
            attempt = .failed(refusal)
        } else {
            attempt = await run(job, threads: threads)
            // Another attempt of this job published the file meanwhile (this one's publish found it there).
            if case .failed(let error) = attempt, error.code == .outputExists,
                let adopted = await adoptPublishedOutput(of: lease)
            {
                attempt = .completed(adopted)
            }
        }
        // The job is completed only once its output is an asset of the library; a failed save leaves
        // the published output and its receipt, so the next attempt adopts it and saves again.
        if case .completed(let result) = attempt, lease.spec.saveToLibrary, job.stopReason != .lost {
            attempt = await save(result, of: job)
        }
        let outcome: JobOutcome
        switch (attempt, job.stopReason) {
        case (_, .lost?):
            logger.warning(
                "lost the job's lease (it was given to another worker); its output was discarded",
                metadata: ["job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt)])
            return
        case (.completed(let result), _):
            outcome = .completed(result)
        case (_, .expired?), (_, .handedBack?), (.interrupted, nil), (.interrupted, .stalled?):
            // A stop is not a failure: the job goes back to the queue, this attempt not counted. (After
            // an expired lease the store may have rescued the job already; then this changes nothing.)
            outcome = .handBack
        case (_, .cancelled?):
            // Only a cancel that the store delivered ends a job cancelled, whatever the export reported.
            outcome = .cancelled
        case (.failed(let error), _):
            outcome = .failed(error)
        }
        let elapsed = ContinuousClock.now - began
        log(outcome, of: lease, exported: job.spec, elapsed: elapsed)
        let recorded = await record(outcome, of: lease)
        // Told at once, before any further I/O: between the store's record and this event a look at the
        // store no longer lists the job as running while this pool still does, and the status page would
        // show it running again (issue 24 item 8).
        metrics.ended(lease, outcome, elapsed: elapsed)
        configuration.onEvent?(.ended(lease, outcome, elapsed: elapsed))
        // The receipt stays on the output only while its completion is not recorded.
        if case .completed = outcome, recorded { await io.run { PublishReceipt.remove(for: lease) } }
    }

    /// Runs the export with its heartbeat and, when the store has leases of limited length, its
    /// self-fencing watch; returns how the export ended.
    private func run(_ job: RunningJob, threads: Int) async -> ExportAttempt {
        let runner = runner
        // The lease runs from the claim: measured from before the claim was sent, never later.
        let lastRenewed = LastRenewal(job.claimSent)
        return await withTaskGroup(of: ExportAttempt?.self) { group in
            group.addTask {
                await runner.run(job, threads: threads) { await self.confirm(job, lastRenewed: lastRenewed) }
            }
            group.addTask { [self] in
                await heartbeat(job, lastRenewed: lastRenewed)
                return nil
            }
            if let lease = store.leaseDuration {
                group.addTask { [self] in
                    await selfFence(job, lease: lease, lastRenewed: lastRenewed)
                    return nil
                }
            }
            var attempt: ExportAttempt?
            while let next = await group.next() {
                guard let next else { continue }
                attempt = next
                job.markFinished()
                group.cancelAll()
            }
            return attempt
                ?? .failed(JobError(code: .internal, message: "the export ended without an outcome", retryable: true))
        }
    }

    /// Why a `library:<id>` job must not run, or nil. A worker with a library resolves the identifier
    /// again: the same bytes run; the same content found at another path (the file was renamed or
    /// moved and the library rescanned) runs from there (`RunningJob.export(_:)`); anything else (other
    /// bytes, none, a file changed since) is `asset-changed`, not retryable, naming the identifier. A
    /// worker without a library checks the recorded file. A library that cannot be read is a retryable
    /// failure.
    private func checkLibrarySource(of job: RunningJob) async -> JobError? {
        let spec = job.lease.spec
        guard let source = spec.library else { return nil }
        do throws(ExportError) {
            guard let library = configuration.library else {
                try source.checkUnchanged()
                return nil
            }
            let now: LibrarySource
            do throws(ExportError) {
                now = try await library.resolve(source.identifier, resource: source.resource)
            } catch {
                guard error.code == .unknownAsset || error.code == .assetChanged else { throw error }
                throw source.changed("the library no longer resolves it (\(error.message))")
            }
            if now.sameBytes(as: source) {
                try source.checkUnchanged()
                return nil
            }
            guard let hash = source.contentHash, now.contentHash == hash, now.byteRange == source.byteRange else {
                throw source.changed("the library now resolves it to other bytes (\(now.path))")
            }
            try now.checkUnchanged()
            var moved = spec
            moved.asset = now.path
            moved.library = now
            job.export(moved)
            let metadata: Logger.Metadata = [
                "job": "\(job.lease.id)", "asset": "\(source.reference)", "from": "\(source.path)", "to": "\(now.path)",
            ]
            logger.info("the library asset moved; exporting it from its new path", metadata: metadata)
            return nil
        } catch {
            return JobError(error)
        }
    }

    /// Saves a completed job's output to the library (`JobSpec.saveToLibrary`): the result with the
    /// new asset's identifier, or the failure that keeps the job from completing.
    private func save(_ result: JobResult, of job: RunningJob) async -> ExportAttempt {
        let lease = job.lease
        guard let library = configuration.library else {
            let error = ExportError(.saveFailed, "this worker has no library to save the output to", retryable: false)
            return .failed(JobError(error))
        }
        do throws(ExportError) {
            var saved = result
            saved.savedLocalIdentifier = try await library.saveOutput(at: lease.spec.output, from: job.spec.library)
            logger.info(
                "saved the output to the library",
                metadata: ["job": "\(lease.id)", "asset": "\(saved.savedLocalIdentifier ?? "")"])
            return .completed(saved)
        } catch {
            return .failed(JobError(error))
        }
    }

    /// The result of the job's output if an earlier attempt published it and could not record it (a
    /// `PublishReceipt` of this job names the file there); nil otherwise.
    private func adoptPublishedOutput(of lease: Lease) async -> JobResult? {
        let found = await io.run {
            () -> (PublishReceipt, ExportSession.Result, LadderResult?, ThumbnailSetExport.Result?)? in
            guard let receipt = PublishReceipt.onOutput(of: lease) else { return nil }
            let output = URL(fileURLWithPath: lease.spec.output)
            if lease.spec.thumbnails != nil {
                guard let set = try? ThumbnailSetExport.describe(folder: output) else { return nil }
                return (receipt, set.summary, nil, set)
            }
            // A ladder's output is its folder: its files are listed again.
            if lease.spec.ladder != nil {
                guard let (result, ladder) = try? ExportSession.describeLadder(at: output) else { return nil }
                return (receipt, result, ladder, nil)
            }
            guard let result = try? ExportSession.describeOutput(at: output) else { return nil }
            return (receipt, result, nil, nil)
        }
        guard let (receipt, described, ladder, thumbnails) = found else { return nil }
        var result = JobResult(described, adopted: true)
        result.ladder = ladder
        result.thumbnails = thumbnails
        result.decision =
            "attempt \(receipt.attempt) published this output but could not record it; adopted without exporting again"
        logger.notice(
            "adopted the output an earlier attempt published",
            metadata: [
                "job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt),
                "publishedBy": .stringConvertible(receipt.attempt),
            ])
        return result
    }

    /// Renews the job's lease every `renewInterval` with its latest progress, and stops the job when
    /// someone cancels it or the lease is lost. `lastRenewed` is when the last renewal that got
    /// through was sent, for `selfFence`.
    private func heartbeat(_ job: RunningJob, lastRenewed: LastRenewal) async {
        while !Task.isCancelled && !job.isFinished {
            await store.waitToRenew(job.lease)
            if Task.isCancelled || job.isFinished { return }
            let sent = ContinuousClock.now
            do {
                switch try await store.renew(job.lease, progress: job.takeProgress()) {
                case .held:
                    lastRenewed.advance(to: sent)
                case .cancelRequested:
                    lastRenewed.advance(to: sent)
                    job.stop(.cancelled)
                case .lost:
                    job.stop(.lost)
                    return
                }
            } catch {
                if Task.isCancelled || job.isFinished { return }
                logger.warning("cannot renew a job's lease", metadata: ["job": "\(job.lease.id)", "error": "\(error)"])
            }
        }
    }

    /// A worker that cannot reach its store stops its job by itself once its lease must have expired,
    /// measured on this machine's monotonic clock from the last renewal that got through: whether the
    /// renewals fail or hang (a network partition that no error reports), the job stops before
    /// another worker could be given it. Once the store answers again, the job is handed back if it is
    /// still this worker's (`StopReason.expired`).
    private func selfFence(_ job: RunningJob, lease: Duration, lastRenewed: LastRenewal) async {
        let step = min(lease / 4, .seconds(1))
        while !Task.isCancelled && !job.isFinished {
            if ContinuousClock.now - lastRenewed.instant >= lease {
                logger.error(
                    "stopping a job whose lease has expired while the store was unreachable",
                    metadata: ["job": "\(job.lease.id)"])
                job.stop(.expired)
                return
            }
            try? await Task.sleep(for: step)
        }
    }

    /// The publish gate: a finished export is renamed into place only if renewing its lease (fenced
    /// on the token) says it is still this worker's and nobody cancelled it. An answer that took half
    /// a lease or more to arrive is not trusted: the lease it renewed may have run out since.
    ///
    /// While the store cannot be reached the gate waits, asking again with backoff, until the store
    /// answers or the lease has certainly expired (a whole lease since the last renewal that got
    /// through; for a store whose leases last as long as the worker, the stall timeout): an outage
    /// shorter than the lease costs the job nothing. A lease that ran out stops the job
    /// (`StopReason.expired`), which is handed back, never failed. Before saying "publish", the gate
    /// leaves a `PublishReceipt` beside the output.
    private func confirm(_ job: RunningJob, lastRenewed: LastRenewal) async -> PublishVerdict {
        var backoff = Backoff()
        let waitedSince = ContinuousClock.now
        var warned = false
        while true {
            if let reason = job.stopReason, reason >= .cancelled { return .stopped }
            let verdict: PublishVerdict
            if let lease = store.leaseDuration {
                // An answer after half a lease is not trusted anyway, so none is waited for longer.
                verdict = await PublishVerdict.within(lease / 2) { [self] in
                    await confirmNow(job, lastRenewed: lastRenewed)
                }
            } else {
                verdict = await confirmNow(job, lastRenewed: lastRenewed)
            }
            switch verdict {
            case .publish:
                do {
                    try await io.run { () throws(FileSystem.Failure) in try PublishReceipt.write(for: job.lease) }
                } catch {
                    // Publishing without one only loses the adoption after a long outage (a file
                    // system without user extended attributes).
                    logger.warning(
                        "cannot leave a publish receipt", metadata: ["job": "\(job.lease.id)", "error": "\(error)"])
                }
                return .publish
            case .stopped:
                return .stopped
            case .unconfirmed(let reason):
                let deadline =
                    store.leaseDuration.map { lastRenewed.instant + $0 }
                    ?? waitedSince + .seconds(configuration.stallTimeout)
                if ContinuousClock.now + backoff.delay >= deadline {
                    logger.error(
                        "the store did not confirm a finished job's lease before it expired; handing the job back",
                        metadata: ["job": "\(job.lease.id)", "error": "\(reason)"])
                    job.stop(.expired)
                    return .stopped
                }
                if !warned {
                    logger.warning(
                        "cannot confirm a finished job's lease yet; waiting for the store",
                        metadata: ["job": "\(job.lease.id)", "error": "\(reason)"])
                    warned = true
                }
                await backoff.wait()
            }
        }
    }

    private func confirmNow(_ job: RunningJob, lastRenewed: LastRenewal) async -> PublishVerdict {
        let sent = ContinuousClock.now
        do {
            switch try await store.renew(job.lease, progress: nil) {
            case .held:
                if let lease = store.leaseDuration, ContinuousClock.now - sent >= lease / 2 {
                    logger.warning(
                        "the store confirmed the job's lease too late to trust; asking again",
                        metadata: ["job": "\(job.lease.id)"])
                    return .unconfirmed("the store took \(ContinuousClock.now - sent) to confirm the lease")
                }
                lastRenewed.advance(to: sent)
                return .publish
            case .cancelRequested:
                job.stop(.cancelled)
                return .stopped
            case .lost:
                job.stop(.lost)
                return .stopped
            }
        } catch {
            return .unconfirmed("\(error)")
        }
    }

    /// Records an outcome, retrying while the store is unreachable and the lease may still be ours.
    /// Returns whether it was recorded.
    @discardableResult
    private func record(_ outcome: JobOutcome, of lease: Lease) async -> Bool {
        let deadline = ContinuousClock.now + (store.leaseDuration ?? .seconds(30))
        var backoff = Backoff()
        while true {
            do {
                if try await !store.finish(lease, outcome) {
                    logger.warning(
                        "lost the job's lease before recording its outcome", metadata: ["job": "\(lease.id)"])
                    return false
                }
                return true
            } catch {
                guard ContinuousClock.now + backoff.delay < deadline else {
                    logger.error(
                        "cannot record a job's outcome; the store will rescue the job",
                        metadata: ["job": "\(lease.id)", "error": "\(error)"])
                    return false
                }
                logger.warning(
                    "cannot record a job's outcome yet", metadata: ["job": "\(lease.id)", "error": "\(error)"])
                await backoff.wait()
            }
        }
    }

    /// The job's last line: `exported` is the spec the export ran (a library asset that moved is read
    /// at its new path), so `asset` names the file actually read.
    private func log(_ outcome: JobOutcome, of lease: Lease, exported: JobSpec, elapsed: Duration) {
        var metadata: Logger.Metadata = [
            "job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt), "asset": "\(exported.asset)",
            "output": "\(lease.spec.output)", "preset": "\(lease.spec.preset)",
            "elapsed": .stringConvertible((elapsed / .seconds(1) * 1000).rounded() / 1000),
        ]
        switch outcome {
        case .completed(let result):
            metadata["method"] = "\(result.methodName)"
            metadata["bytes"] = .stringConvertible(result.bytes)
            if elapsed > .zero {
                let speed = result.durationSeconds / (elapsed / .seconds(1))
                metadata["speed"] = .stringConvertible((speed * 100).rounded() / 100)
            }
            logger.info("job completed", metadata: metadata)
        case .failed(let error):
            metadata["code"] = "\(error.code)"
            metadata["message"] = "\(error.message)"
            metadata["retryable"] = .stringConvertible(error.retryable)
            logger.error("job failed", metadata: metadata)
        case .cancelled:
            logger.info("job cancelled", metadata: metadata)
        case .handBack:
            logger.info("job handed back", metadata: metadata)
        }
    }
}

/// When the last renewal of a job's lease that got through was sent, shared by its heartbeat and
/// its self-fencing watch.
private final class LastRenewal: Sendable {
    private let last: Mutex<ContinuousClock.Instant>

    init(_ instant: ContinuousClock.Instant) { last = Mutex(instant) }

    var instant: ContinuousClock.Instant { last.withLock { $0 } }

    func advance(to instant: ContinuousClock.Instant) {
        last.withLock { $0 = max($0, instant) }
    }
}
