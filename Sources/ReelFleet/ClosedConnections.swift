import Logging
import PostgresNIO

/// A query for a connection the server has closed, refused instead of sent.
///
/// postgres-nio (1.33) writes a query to its connection's channel without a promise for the write:
/// once the channel has closed, the write is dropped with the handler that would have answered it,
/// and the caller waits for that answer forever (and a pooled connection stays leased). A server
/// closes a connection on `idle_in_transaction_session_timeout` (the store's time limit for a
/// transaction its client stopped talking in, a third of the lease: a few seconds on a machine busy
/// enough to stall its client that long), on a restart, or when an administrator ends the session.
/// So every query on a connection the store holds (a transaction, the listener's ping) goes through
/// `checkedQuery`, and transactions through `checkedTransaction`, which look first. (A close that
/// lands between the look and the write is still waited out, bounded by the request's time limit.)
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
    /// `query(_:logger:)`, refused with `ConnectionClosed` on a connection that has closed.
    @discardableResult
    package func checkedQuery(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionClosed() }
        return try await self.query(query, logger: logger, file: file, line: line)
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
