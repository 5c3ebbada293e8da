import Logging
import PostgresNIO
import Synchronization

/// A query on a connection the server has closed fails with `ConnectionClosed` instead of waiting forever.
///
/// postgres-nio (1.33) writes a query to its connection's channel without a promise for the write:
/// once the channel has closed, the write is dropped with the handler that would have answered it,
/// and the caller waits for that answer forever (and a pooled connection stays leased, and a task
/// group racing the query against a probe waits for it too). A server closes a connection on
/// `idle_in_transaction_session_timeout` (the store's limit for a transaction its client stopped
/// talking in, a third of the lease: a few seconds on a machine busy enough to stall its client that
/// long), on a restart (a pooled connection the pool has not yet seen close), or when an
/// administrator ends the session.
///
/// So every query the stores make goes through `checkedQuery` (on a connection they hold: a
/// transaction, the listener's ping) or `checkedRows` (on the pool), and transactions through
/// `checkedTransaction`. Each query is watched: one callback per connection on its close future
/// (`ClosedConnectionWatch`) fails every query still waiting on it when it closes, however late the
/// close comes. The query left behind inside postgres-nio stays parked; that costs a few hundred
/// bytes once per lost connection.
package struct ConnectionClosed: Error, CustomStringConvertible {
    /// The likely reasons, for messages.
    package static let reasons = "a transaction idle past its time limit, a restart, or an administrator"
    package var description: String { "the database closed the connection (\(Self.reasons))" }
}

/// A transaction's COMMIT that failed: whether it was applied is not known from here when the answer
/// was lost (the connection dropped after it was sent); `underlying` says why.
package struct CommitFailed: Error, CustomStringConvertible {
    package let underlying: any Error
    package var description: String { "\(underlying)" }
}

extension PostgresConnection {
    /// `query(_:logger:)`, failed with `ConnectionClosed` when the connection closes before it is answered.
    @discardableResult
    package func checkedQuery(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionClosed() }
        let answer = OneAnswer<PostgresRowSequence>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.wait(continuation)
            let watch = ClosedConnectionWatch.shared.watch(self) { answer.give(.failure(ConnectionClosed())) }
            Task {
                let result: Result<PostgresRowSequence, any Error>
                do {
                    result = .success(try await self.query(query, logger: logger, file: file, line: line))
                } catch {
                    result = .failure(error)
                }
                ClosedConnectionWatch.shared.unwatch(self, watch)
                answer.give(result)
            }
        }
    }

    /// `withTransaction(logger:_:)` on `checkedQuery`: BEGIN, `body`, COMMIT; on an error, ROLLBACK
    /// (unless the connection has closed, which rolled the transaction back on the server) and the
    /// error itself is rethrown, not wrapped. A failed COMMIT throws `CommitFailed`.
    package func checkedTransaction<T: Sendable>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await checkedQuery("BEGIN", logger: logger)
        let value: T
        do {
            value = try await body(self)
        } catch {
            if !isClosed { _ = try? await checkedQuery("ROLLBACK", logger: logger) }
            throw error
        }
        do {
            try await checkedQuery("COMMIT", logger: logger)
        } catch {
            throw CommitFailed(underlying: error)
        }
        return value
    }
}

extension PostgresClient {
    /// `withTransaction(logger:_:)` on one of the pool's connections, through `checkedTransaction`.
    package func checkedTransaction<T: Sendable>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection(isolation: isolation) { connection in
            try await connection.checkedTransaction(logger: logger, isolation: isolation, body)
        }
    }
}

extension PostgresClient {
    /// Runs `query` on one of the pool's connections through `checkedQuery` and collects its rows.
    package func checkedRows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection { connection in
            var rows: [PostgresRow] = []
            for try await row in try await connection.checkedQuery(query, logger: logger) { rows.append(row) }
            return rows
        }
    }
}

/// The queries waiting on each open connection, failed together when it closes: one callback per
/// connection on its close future (a callback per query would pile up for as long as a pooled
/// connection lives), removed with the connection.
final class ClosedConnectionWatch: Sendable {
    static let shared = ClosedConnectionWatch()

    private struct State {
        var next: UInt64 = 0
        /// The waiting queries' close handlers, per connection; a connection is here from its first
        /// watched query until it closes.
        var connections: [ObjectIdentifier: [UInt64: @Sendable () -> Void]] = [:]
    }

    private let state = Mutex(State())

    /// Calls `onClose` if `connection` closes before `unwatch`; at once (on the connection's event
    /// loop) if it has closed already. Returns the watch's token.
    func watch(_ connection: PostgresConnection, _ onClose: @escaping @Sendable () -> Void) -> UInt64 {
        let key = ObjectIdentifier(connection)
        let (token, first) = state.withLock { state -> (UInt64, Bool) in
            state.next += 1
            let first = state.connections[key] == nil
            state.connections[key, default: [:]][state.next] = onClose
            return (state.next, first)
        }
        // A connection seen for the first time (or again after its close was handled) gets its one
        // callback; on a future that has completed already it runs at once.
        if first { connection.closeFuture.whenComplete { _ in self.closed(key) } }
        return token
    }

    func unwatch(_ connection: PostgresConnection, _ token: UInt64) {
        state.withLock { state in _ = state.connections[ObjectIdentifier(connection)]?.removeValue(forKey: token) }
    }

    private func closed(_ key: ObjectIdentifier) {
        let handlers = state.withLock { $0.connections.removeValue(forKey: key) } ?? [:]
        for handler in handlers.values { handler() }
    }
}

/// A continuation resumed by whichever answer comes first (the query's, or its connection's close).
private final class OneAnswer<T: Sendable>: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<T, any Error>?, result: Result<T, any Error>?)>(
        (nil, nil))

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// The first answer wins; later ones are dropped.
    func give(_ result: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
