import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue
import ServiceLifecycle
import Synchronization

#if Server
    import ReelServer
#endif

/// The version `reel --version` prints and the build-info metric carries: CHANGELOG.md's first
/// numbered heading, read at build time.
enum ReelVersion {
    static let version = BuildCommit.version
    /// The git commit the binary was built from (`unknown` outside a checkout).
    static let commit = BuildCommit.id
}

/// `reel work`'s options for running as a service: the HTTP side and the shutdown grace.
struct ServiceOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve Prometheus metrics (/metrics), health (/healthz, /readyz) and a status page (/) on this port (off by default; 0: any free port).",
            valueName: "port"))
    var metricsPort: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The address the metrics port listens on (default 127.0.0.1; 0.0.0.0 or :: for every interface).",
            valueName: "address"))
    var metricsAddress: String = "127.0.0.1"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often the queue is counted by state for the metrics and the status page.", valueName: "seconds"))
    var statsInterval: Double = 10

    @Option(
        name: .long,
        help: ArgumentHelp(
            "After SIGTERM, let running jobs finish for at most this long, then hand them back (default: wait for them).",
            valueName: "seconds"))
    var shutdownGrace: Double?

    func validate() throws {
        if let metricsPort, !(0...65535).contains(metricsPort) {
            throw ValidationError("--metrics-port must be between 0 and 65535")
        }
        if !(0.1...3600).contains(statsInterval) {
            throw ValidationError("--stats-interval must be between 0.1 and 3600 seconds")
        }
        if let shutdownGrace, !(0...86400).contains(shutdownGrace) {
            throw ValidationError("--shutdown-grace must be between 0 and 86400 seconds")
        }
    }

    /// What `reel work` runs, as services of one `ServiceGroup`: a database store's connection pool
    /// (first, so it is shut down last), with `--metrics-port` the HTTP server and the queue monitor,
    /// and the worker pool (last, so it is shut down first). The first SIGINT/SIGTERM/SIGHUP drains the pool
    /// (running jobs finish; the HTTP side keeps answering, `/readyz` with 503); a second one, or
    /// `--shutdown-grace` running out, hands running jobs back; then the HTTP side stops, and the
    /// store closes once every outcome and hand-back is recorded. The group ends when the pool has
    /// stopped.
    final class Runtime: Sendable {
        #if Server
            let board: StatusBoard?
        #endif
        let options: ServiceOptions
        let logger: Logger

        init(options: ServiceOptions, presets: PresetLibrary) {
            self.options = options
            logger = Logger(label: "reel.worker")
            #if Server
                if options.metricsPort != nil {
                    _ = PrometheusBackend.registry
                    PrometheusBackend.recordBuildInfo(version: ReelVersion.version, commit: ReelVersion.commit)
                    board = StatusBoard(presets: presets)
                } else {
                    board = nil
                }
            #endif
        }

        /// Feeds the pool's events to the status board and to systemd (`READY=1` once the pool takes
        /// jobs, `STOPPING=1` when it stops taking them).
        func observe(_ event: WorkerPoolEvent) {
            #if Server
                board?.handle(event)
            #endif
            if case .stateChanged(let state) = event {
                switch state {
                case .running: SystemdNotifier.notify("READY=1\nSTATUS=taking jobs")
                case .draining: SystemdNotifier.notify("STOPPING=1\nSTATUS=finishing running jobs")
                case .cancelling: SystemdNotifier.notify("STOPPING=1\nSTATUS=handing running jobs back")
                case .idle, .stopped: break
                }
            }
        }

        func run(_ pool: WorkerPool, store: any JobStore, storeService: (any Service)?, slots: Int) async throws {
            #if !Server
                if options.metricsPort != nil { throw LeftOut.server.failure }
            #endif
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
            if let storeService { services.append(.init(service: storeService)) }
            #if Server
                if let port = options.metricsPort, let board {
                    let monitor = QueueMonitor(
                        store: store, interval: .milliseconds(Int(options.statsInterval * 1000)))
                    let server = OpsServer(
                        configuration: .init(
                            host: options.metricsAddress, port: port, version: ReelVersion.version,
                            commit: ReelVersion.commit),
                        pool: pool, store: store, monitor: monitor, board: board, slots: slots, logger: logger)
                    services.append(.init(service: server))
                    services.append(.init(service: monitor))
                }
            #endif
            // Last in the list, so the first to be shut down gracefully: the HTTP side keeps serving
            // while the pool drains, and the store stays open until the pool has recorded everything.
            services.append(
                .init(service: WorkerPoolService(pool), successTerminationBehavior: .gracefullyShutdownGroup))
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger))
            // Signals are handled here rather than by the group, which reacts only to the first: the
            // first drains, a second hands running jobs back (as `reel work` always did). The grace
            // is the pool's own (a hand-back when it runs out), not the group's
            // `maximumGracefulShutdownDuration`: that would cancel every service at once, the store
            // with the pool, and the hand-back could not be recorded.
            let signals = Signals()
            let grace = options.shutdownGrace
            let sources = CLI.onTerminationSignals {
                if signals.count() == 1 {
                    Task { await group.triggerGracefulShutdown() }
                    if let grace {
                        DispatchQueue.global().asyncAfter(deadline: .now() + grace) {
                            pool.stop(cancelRunning: true)
                        }
                    }
                } else {
                    pool.stop(cancelRunning: true)
                }
            }
            defer { sources.forEach { $0.cancel() } }
            #if Server
                do {
                    try await group.run()
                } catch let error as OpsServerError {
                    throw CLIFailure(message: error.message, exitStatus: .unavailable)
                }
            #else
                try await group.run()
            #endif
        }
    }
}

/// Counts termination signals.
private final class Signals: Sendable {
    private let received = Synchronization.Atomic<Int>(0)
    /// Records one more signal; returns how many there have been.
    func count() -> Int { received.add(1, ordering: .sequentiallyConsistent).newValue }
}

/// Tells systemd how the service is doing (`Type=notify`), when it runs under systemd.
enum SystemdNotifier {
    /// Sends `state` to `$NOTIFY_SOCKET`; does nothing without one.
    static func notify(_ state: String) {
        guard var path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !path.isEmpty else { return }
        // An abstract socket is written with a leading '@' and addressed with a leading NUL.
        let abstract = path.hasPrefix("@")
        if abstract { path.removeFirst() }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count + (abstract ? 1 : 0) < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: (abstract ? [0] : []) + bytes)
        }
        let length = socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 1 : 0))
        let message = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, message, message.count, 0, socketAddress, length)
            }
        }
    }
}
