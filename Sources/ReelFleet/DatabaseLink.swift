import Foundation
import Logging
import PostgresNIO
import ReelQueue
import Synchronization

/// The store's way to its database: the connection pool (postgres-nio's `PostgresClient`) and a probe,
/// one connection of its own, that tells a database refusing connections from one answering slowly.
///
/// postgres-nio's pool keeps a request waiting while it cannot connect (until its circuit breaker
/// trips, after 60 s), and once it has failed it reconnects only when its own backoff says so (100 ms
/// × 1.25 per failure, up to 60 s: about 4 s after a 20 s outage). Left alone, a command against a
/// stopped database waits out its whole time limit, and a worker stays blind for seconds after the
/// database is back. So:
/// - a request not answered within `probeAfter` makes one connection of its own (and again, at
///   growing intervals up to 5 s, while it waits); a refusal (the
///   connection refused, the host unreachable, the server's own "no" at startup) fails the request at
///   once, and from then on every request probes first and fails in milliseconds instead of queueing;
/// - while refused, the database is probed every `probeInterval`; the first probe it answers opens a
///   new pool for the requests that follow (the old one, stuck in its backoff, is closed once requests
///   on it have had their time) and calls `onRecovered`, so claims and readiness come back within
///   about one probe interval.
///
/// `run()` runs the pools and the probing: requests wait for it to start and fail once it returned.
package final class DatabaseLink: Sendable {
    /// How long a request may go unanswered before the probe looks at the database.
    static let probeAfter = Duration.milliseconds(500)
    /// How often a database that refused is probed again.
    static let probeInterval = Duration.milliseconds(500)
    /// How long a probe may take to connect before it tells nothing (a silent host, not a refusal).
    static let probeConnectTimeout = Duration.seconds(2)
    /// How often a database is probed again when it refused for a reason waiting does not fix soon
    /// (a password it rejects, a database it does not have): twice a second would only fill its log.
    static let lastingRefusalInterval = Duration.seconds(5)

    /// What a probe found.
    enum Probe: Sendable, Equatable {
        /// The database took a connection.
        case answered
        /// It refused one, for this reason (a sentence naming the database).
        case refused(String)
        /// No answer in time, or the probe was cancelled: neither up nor down.
        case inconclusive
    }

    /// The error of a request the database refused.
    struct Refused: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// One pool, open until it is retired.
    final class Pool: Sendable {
        let client: PostgresClient
        let retired = Latch()

        init(_ client: PostgresClient) { self.client = client }
    }

    private struct State {
        var pool: Pool
        /// Why the latest probe failed, while the database refuses connections.
        var refusal: String?
        /// Whether that refusal was the server's "no" to this login (see `lastingRefusalInterval`).
        var refusalLasts = false
        var lastProbe: (at: ContinuousClock.Instant, result: Probe)?
        var probing = false
        var connectionConfiguration: PostgresConnection.Configuration?
        var nextConnectionID = 0
    }

    let url: DatabaseURL
    private let poolConfiguration: PostgresClient.Configuration
    private let startupParameters: [(String, String)]
    /// How long a retired pool stays open for the requests already on it.
    private let linger: Duration
    private let logger: Logger
    private let quietLogger: Logger
    private let state: Mutex<State>
    private let pools: AsyncStream<Pool>
    private let newPools: AsyncStream<Pool>.Continuation
    private let onRecovered: @Sendable () -> Void

    init(
        url: DatabaseURL, configuration: PostgresClient.Configuration, linger: Duration, logger: Logger,
        onRecovered: @escaping @Sendable () -> Void
    ) {
        self.url = url
        poolConfiguration = configuration
        startupParameters = configuration.options.additionalStartupParameters
        self.linger = linger
        self.logger = logger
        var quiet = logger
        quiet.logLevel = .error
        quietLogger = quiet
        self.onRecovered = onRecovered
        let first = Pool(PostgresClient(configuration: configuration, backgroundLogger: quiet))
        state = Mutex(State(pool: first))
        (pools, newPools) = AsyncStream.makeStream(of: Pool.self)
        newPools.yield(first)
    }

    /// The pool requests use now.
    var client: PostgresClient { state.withLock { $0.pool.client } }

    /// Whether the latest probe found the database refusing connections.
    var isRefusing: Bool { state.withLock { $0.refusal != nil } }

    // MARK: - Running

    /// Runs every pool (the first, and each opened after an outage) and the probing while the database
    /// refuses, until `stop()` or cancellation; then closes the pools.
    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.watch() }
            for await pool in pools {
                group.addTask { await self.serve(pool) }
            }
            group.cancelAll()
        }
    }

    /// Ends `run()`.
    func stop() { newPools.finish() }

    /// Runs one pool until it is retired (and has lingered) or `run()` ends.
    private func serve(_ pool: Pool) async {
        await withDiscardingTaskGroup { group in
            group.addTask { await pool.client.run() }
            await pool.retired.wait()
            if !Task.isCancelled { try? await Task.sleep(for: linger) }
            group.cancelAll()
        }
    }

    /// Probes a refusing database every `probeInterval` until it answers.
    private func watch() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.probeInterval)
            if isRefusing { _ = await probe(reuseWithin: Self.probeInterval / 2) }
        }
    }

    // MARK: - Requests

    /// Runs a request on the pool, failing it at once when the database refuses connections (see the
    /// type's description). The caller bounds the time.
    func guarded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        if isRefusing, case .refused(let reason) = await probe(reuseWithin: Self.probeInterval / 2) {
            throw Refused(reason: reason)
        }
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    // Probed again while the request waits (0.5, 1, 2, 4, then every 5 s): a probe that
                    // found the database answering just before it went away (or a result another
                    // request's probe found a moment earlier) must not leave the request waiting out
                    // its whole time limit.
                    var delay = Self.probeAfter
                    while true {
                        try await Task.sleep(for: delay)
                        if case .refused(let reason) = await self.probe(reuseWithin: min(delay, .seconds(1))) {
                            throw Refused(reason: reason)
                        }
                        delay = min(delay * 2, Self.lastingRefusalInterval)
                    }
                }
                for try await answer in group {
                    group.cancelAll()
                    return answer
                }
                throw CancellationError()
            }
        } catch let error where !Task.isCancelled && Self.mayBeUnreachable(error) {
            // A connection lost under a request: say so if the database now refuses connections.
            if case .refused(let reason) = await probe(reuseWithin: Self.probeInterval / 2) {
                throw Refused(reason: reason)
            }
            throw error
        }
    }

    /// Whether an error may come from an unreachable database (rather than from the server's answer,
    /// a refusal already found, or cancellation).
    private static func mayBeUnreachable(_ error: any Error) -> Bool {
        if error is Refused || error is CancellationError || error is QueueError { return false }
        if let error = error as? PSQLError, error.serverInfo != nil { return false }
        if let error = error as? CommitFailed { return mayBeUnreachable(error.underlying) }
        return true
    }

    /// Runs `body` on a connection of its own (not the pool's), closed when it returns. The connection
    /// starts with the pool's settings (its time limits), or with `settings` in their place.
    package func withOwnConnection<T: Sendable>(
        connectTimeout: Duration = .seconds(5), settings: [(String, String)]? = nil,
        _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let connection = try await connect(timeout: connectTimeout, settings: settings)
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private func connect(timeout: Duration, settings: [(String, String)]? = nil) async throws -> PostgresConnection {
        let (cached, id) = state.withLock { state in
            state.nextConnectionID += 1
            return (state.connectionConfiguration, state.nextConnectionID)
        }
        var configuration: PostgresConnection.Configuration
        if let settings {
            configuration = try url.connectionConfiguration(connectTimeout: timeout, startupParameters: settings)
        } else if let cached {
            configuration = cached
        } else {
            configuration = try url.connectionConfiguration(
                connectTimeout: timeout, startupParameters: startupParameters)
            let made = configuration
            state.withLock { $0.connectionConfiguration = made }
        }
        configuration.options.connectTimeout = TimeAmount(timeout)
        return try await PostgresConnection.connect(configuration: configuration, id: id, logger: quietLogger)
    }

    // MARK: - Probing

    /// Whether the database takes a connection now: a result younger than `maxAge` is reused, and
    /// while a probe runs, others get the latest result instead of connecting too. A refusal after
    /// answers, or an answer after refusals, changes the link's state (and an answer opens a new pool).
    func probe(reuseWithin maxAge: Duration) async -> Probe {
        let now = ContinuousClock.now
        let known = state.withLock { state -> Probe? in
            let maxAge = state.refusalLasts ? max(maxAge, Self.lastingRefusalInterval) : maxAge
            if let last = state.lastProbe, now - last.at < maxAge { return last.result }
            if state.probing { return state.lastProbe?.result ?? .inconclusive }
            state.probing = true
            return nil
        }
        if let known { return known }
        let result: Probe
        var lasting = false
        do {
            try await withOwnConnection(connectTimeout: Self.probeConnectTimeout) { _ in }
            result = .answered
        } catch {
            result = Self.classify(error, url: url)
            lasting = Self.isLasting(error)
        }
        let (retired, recovered, refused) = state.withLock { state -> (Pool?, Bool, String?) in
            state.probing = false
            // (Only what the probe found is kept: "no answer in time" says nothing to reuse.)
            if result != .inconclusive { state.lastProbe = (ContinuousClock.now, result) }
            switch result {
            case .answered:
                guard state.refusal != nil else { return (nil, false, nil) }
                state.refusal = nil
                state.refusalLasts = false
                let old = state.pool
                state.pool = Pool(PostgresClient(configuration: poolConfiguration, backgroundLogger: quietLogger))
                newPools.yield(state.pool)
                return (old, true, nil)
            case .refused(let reason):
                let first = state.refusal == nil
                state.refusal = reason
                state.refusalLasts = lasting
                return (nil, false, first ? reason : nil)
            case .inconclusive:
                return (nil, false, nil)
            }
        }
        if let refused {
            logger.info("the database refuses connections", metadata: ["reason": "\(refused)"])
        }
        if recovered {
            logger.info("the database answers again; opened a new connection pool", metadata: ["store": "\(url)"])
            retired?.retired.open()
            onRecovered()
        }
        return result
    }

    /// What a failed connection attempt says about the database.
    static func classify(_ error: any Error, url: DatabaseURL) -> Probe {
        guard let error = error as? PSQLError else { return .inconclusive }
        if let message = error.serverInfo?[.message] {
            return .refused("the database at \(url) refused the connection: \(message)")
        }
        guard error.code == .connectionError, let underlying = error.underlying else { return .inconclusive }
        if let channel = underlying as? ChannelError, case .connectTimeout = channel { return .inconclusive }
        let code = errnoCode(of: underlying)
        let reason = code.map { String(cString: strerror($0)) } ?? "\(underlying)"
        switch code {
        case ECONNREFUSED, ENOENT:
            return .refused("the database at \(url) refused the connection (\(reason))")
        default:
            return .refused("the database at \(url) cannot be reached (\(reason))")
        }
    }

    /// Whether the server refused this login for a reason waiting does not fix soon: authentication
    /// (SQLSTATE class 28) or a database it does not have (3D000). Not "the database system is
    /// starting up" (57P03), which a restart passes through on its way back.
    static func isLasting(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state.hasPrefix("28") || state == "3D000"
    }

    /// The system error behind a failed connect, when there is one.
    private static func errnoCode(of error: any Error) -> Int32? {
        if let error = error as? IOError { return error.errnoCode }
        if let error = error as? NIOConnectionError {
            return error.connectionErrors.lazy.compactMap { errnoCode(of: $0.error) }.first
        }
        return nil
    }
}

/// Opens once; `wait()` returns once it is open, or as soon as the waiting task is cancelled.
final class Latch: Sendable {
    private struct State {
        var open = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.open } }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
