import Foundation
import Logging
import ReelExport
import Synchronization

/// Runs queued jobs: N worker threads, each exporting one job at a time, off Swift's cooperative pool.
///
/// A service with an explicit state: `running` → (`draining` on the first stop: no new claims, running
/// jobs finish) → (`cancelling` on the second: running jobs are cancelled and handed back) → `stopped`.
public final class WorkerPool: Sendable {
    public struct Configuration: Sendable {
        /// Worker threads (jobs at once).
        public var jobs: Int
        /// Exit once nothing is waiting or running.
        public var drain: Bool
        public var presets: PresetLibrary
        public var limits: InputLimits
        /// How often dead workers' jobs are looked for.
        public var recoveryInterval: TimeInterval
        /// Seconds without progress before a job fails as `stalled`.
        public var stallTimeout: TimeInterval
        /// Run each export in a child process (nil: in this process).
        public var isolation: Isolation?

        public init(
            jobs: Int = WorkerPool.defaultJobs, drain: Bool = false, presets: PresetLibrary = .shipped,
            limits: InputLimits = Asset.defaultLimits, recoveryInterval: TimeInterval = 2,
            stallTimeout: TimeInterval = 120,
            isolation: Isolation? = nil
        ) {
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
    /// (see `CoreBudget`): one each when jobs are waiting, every core for a video job on its own.
    public static var defaultJobs: Int { max(1, min(8, ProcessInfo.processInfo.activeProcessorCount)) }

    enum State: Equatable { case idle, running, draining, cancelling, stopped }

    private struct Shared {
        var state = State.idle
        var sessions: [String: any JobHandle] = [:]
    }

    private let store: SpoolStore
    private let configuration: Configuration
    private let shared = Mutex(Shared())
    private let cores: CoreBudget
    private let logger = Logger(label: "reel.worker")

    public init(store: SpoolStore, configuration: Configuration) {
        self.store = store
        self.configuration = configuration
        // More workers than cores is the user's call: each then gets a unit of its own.
        cores = CoreBudget(total: max(ProcessInfo.processInfo.activeProcessorCount, configuration.jobs))
    }

    /// Runs the workers on the calling thread's behalf and returns when they have all stopped.
    public func run() {
        let start = shared.withLock { shared -> Bool in
            guard shared.state == .idle else { return false }
            shared.state = .running
            return true
        }
        guard start else { return }
        logger.info("worker pool started", metadata: ["jobs": "\(configuration.jobs)", "spool": "\(store.root.path)"])
        store.recover()
        let group = DispatchGroup()
        for index in 0..<configuration.jobs {
            group.enter()
            let thread = Thread { [self] in
                workerLoop(name: "\(ProcessInfo.processInfo.hostName):\(getpid()):\(index)")
                group.leave()
            }
            thread.name = "reel-worker-\(index)"
            thread.stackSize = 4 << 20
            thread.start()
        }
        group.wait()
        shared.withLock { $0.state = .stopped }
        logger.info("worker pool stopped")
    }

    /// First call: stop claiming and let running jobs finish. Second call (or `cancelRunning`): cancel
    /// running jobs and hand them back to the queue.
    public func stop(cancelRunning: Bool = false) {
        let sessions: [any JobHandle] = shared.withLock { shared in
            switch shared.state {
            case .idle, .running:
                shared.state = cancelRunning ? .cancelling : .draining
            case .draining:
                shared.state = .cancelling
            case .cancelling, .stopped:
                break
            }
            return shared.state == .cancelling ? Array(shared.sessions.values) : []
        }
        logger.info(sessions.isEmpty ? "stopping: finishing running jobs" : "stopping: handing running jobs back")
        for session in sessions { session.stop() }
    }

    private var isRunning: Bool { shared.withLock { $0.state == .running } }

    /// Whether more codec threads would speed the job up: a video preset (it may still turn out to be
    /// a smart passthrough, which leaves the extra units idle for that short while). Audio encoders and
    /// copies are single-threaded.
    private func scalesWithCores(_ spec: JobSpec) -> Bool {
        guard let preset = try? configuration.presets.preset(named: spec.preset) else { return false }
        return preset.kind == .video && !spec.outputType.isAudioOnly
    }

    private func workerLoop(name: String) {
        let runner = JobRunner(
            store: store, presets: configuration.presets, limits: configuration.limits,
            stallTimeout: configuration.stallTimeout)
        let isolated = configuration.isolation.map {
            IsolatedRunner(store: store, isolation: $0, stallTimeout: configuration.stallTimeout)
        }
        let watcher = DirectoryWatcher(path: store.waitingFolder)
        var lastRecovery = Date()
        while isRunning {
            if Date().timeIntervalSince(lastRecovery) >= configuration.recoveryInterval {
                store.recover()
                lastRecovery = Date()
            }
            // Claims go through the core budget: none while a lone job uses every core.
            let admission = cores.admit(timeout: 0.5) { () -> Claim? in
                do {
                    return try store.claim(worker: name)
                } catch {
                    logger.error("cannot claim", metadata: ["error": "\(error)"])
                    return nil
                }
            } scales: { claim in
                scalesWithCores(claim.spec) && !store.hasWaitingJobs()
            }
            if case .busy = admission { continue }
            if case .admitted(let claim, let units) = admission {
                defer { cores.release(units) }
                let threads = cores.threads(holding: units)
                let register: (JobHandle?) -> Void = { handle in
                    let cancelNow = self.shared.withLock { shared -> Bool in
                        shared.sessions[claim.id] = handle
                        return shared.state == .cancelling
                    }
                    if cancelNow { handle?.stop() }
                }
                let handBack: @Sendable () -> Bool = { [self] in shared.withLock { $0.state == .cancelling } }
                if let isolated {
                    isolated.run(claim, threads: threads, register: register, handBack: handBack)
                } else {
                    runner.run(claim, threads: threads, register: register, handBack: handBack)
                }
                continue
            }
            if configuration.drain && !store.hasPendingWork() { break }
            // Sleep until a job arrives (inotify), a retry falls due, or a recovery pass is due.
            let retry = store.secondsUntilNextRetry() ?? .infinity
            watcher.wait(seconds: min(0.5, retry, configuration.recoveryInterval))
        }
    }
}
