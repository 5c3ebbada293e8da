import Foundation
import Hummingbird
import Logging
import NIOCore
import ReelExport
import ReelQueue
import ServiceLifecycle

/// A worker's HTTP side, on one port (`reel work --metrics-port`):
///
/// - `GET /metrics`: Prometheus text (every metric recorded through swift-metrics, plus `reel_build_info`).
/// - `GET /healthz`: liveness, about the process alone: 200 whenever it can answer at all (a store
///   that is away is no reason to restart the worker; restarting would not bring it back).
/// - `GET /readyz`: 200 while the worker takes jobs (its pool is running and the store answers within
///   `storeTimeout`); 503 before it starts, while it drains or stops, and while the store is away.
/// - `GET /`: the status page (one HTML file, no external assets), which refreshes itself from
/// - `GET /status.json`: this worker, the queue by state, running jobs with their progress, recent
///   failures and throughput per preset.
///
/// A `Service`: it serves until graceful shutdown, finishing requests in flight.
public struct OpsServer: Service {
    public struct Configuration: Sendable {
        /// The address to listen on (loopback unless widened).
        public var host: String
        /// The port (0: any free port; the one chosen is reported to `onListening`).
        public var port: Int
        public var version: String
        public var commit: String
        /// How long `/readyz` waits for the store before answering 503.
        public var storeTimeout: Duration

        public init(
            host: String = "127.0.0.1", port: Int, version: String, commit: String, storeTimeout: Duration = .seconds(2)
        ) {
            self.host = host
            self.port = port
            self.version = version
            self.commit = commit
            self.storeTimeout = storeTimeout
        }
    }

    let configuration: Configuration
    let pool: WorkerPool
    let store: any JobStore
    let monitor: QueueMonitor
    let board: StatusBoard
    let slots: Int
    let logger: Logger
    let onListening: @Sendable (_ host: String, _ port: Int) -> Void

    public init(
        configuration: Configuration, pool: WorkerPool, store: any JobStore, monitor: QueueMonitor,
        board: StatusBoard, slots: Int, logger: Logger,
        onListening: @escaping @Sendable (_ host: String, _ port: Int) -> Void = { _, _ in }
    ) {
        self.configuration = configuration
        self.pool = pool
        self.store = store
        self.monitor = monitor
        self.board = board
        self.slots = slots
        self.logger = logger
        self.onListening = onListening
    }

    public func run() async throws {
        // Hummingbird's own routine lines (its start, each request) only with --verbose.
        var serverLogger = logger
        serverLogger.logLevel = logger.logLevel <= .debug ? logger.logLevel : .warning
        let app = Application(
            router: router(),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "reel"),
            onServerRunning: { [onListening, configuration, logger] channel in
                let port = channel.localAddress?.port ?? configuration.port
                logger.info(
                    "serving metrics, health and the status page",
                    metadata: ["url": "http://\(Self.urlHost(configuration.host)):\(port)/"])
                onListening(configuration.host, port)
            },
            logger: serverLogger)
        do {
            try await app.run()
        } catch {
            throw OpsServerError(
                message: "cannot serve on \(Self.urlHost(configuration.host)):\(configuration.port): \(error)")
        }
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: PrometheusBackend.exposition())))
        }
        router.get("/healthz") { _, _ in
            Self.text(.ok, "ok\n")
        }
        router.get("/readyz") { _, _ in
            let state = pool.state
            guard state == .running else { return Self.text(.serviceUnavailable, "not ready: \(Self.name(state))\n") }
            if let problem = await storeProblem() { return Self.text(.serviceUnavailable, "not ready: \(problem)\n") }
            return Self.text(.ok, "ready\n")
        }
        router.get("/status.json") { _, _ in
            let data = (try? JSONCoding.lineEncoder.encode(report())) ?? Data("{}".utf8)
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: StatusPage.html)))
        }
        return router
    }

    /// Why the store cannot be used now, or nil when it can: at most `storeTimeout` after the call
    /// (the check runs in a task of its own, left to end by itself when it takes longer).
    func storeProblem() async -> String? {
        let store = store
        let timeout = configuration.storeTimeout
        do {
            try await Deadline.run(within: timeout) { try await store.checkReachable() }
            return nil
        } catch is Deadline.Expired {
            return "store did not answer within \(timeout)"
        } catch {
            return "store unavailable: \(error)"
        }
    }

    func report() -> StatusReport {
        let running = pool.runningJobs()
        let worker = StatusReport.Worker(
            name: "\(ProcessInfo.processInfo.hostName):\(getpid())", version: configuration.version,
            commit: configuration.commit, state: Self.name(pool.state), startedAt: board.startedAt, slots: slots,
            busy: running.count, store: store.location)
        return StatusReport(worker: worker, snapshot: monitor.snapshot, local: running, board: board)
    }

    static func name(_ state: WorkerPool.State) -> String {
        switch state {
        case .idle: "starting"
        case .running: "running"
        case .draining: "draining"
        case .cancelling: "cancelling"
        case .stopped: "stopped"
        }
    }

    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// An IPv6 address in a URL goes in brackets.
    static func urlHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }
}

/// The HTTP side could not start or stopped with an error (a port in use, an address not on this host).
public struct OpsServerError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
