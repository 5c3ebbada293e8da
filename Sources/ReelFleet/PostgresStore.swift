import Foundation
import Logging
import PostgresNIO
import ReelExport
import ReelQueue
import Synchronization

/// The fleet's job store: one queue in PostgreSQL that workers on many machines share.
///
/// - A claim is one statement (`FOR UPDATE SKIP LOCKED` on the most urgent waiting row, then the
///   update that hands it out); no transaction is open while a job runs.
/// - A claim gives the job a lease: a fresh token and a deadline on the database's clock. Workers
///   renew it every `renewInterval`, with their progress; every write a worker makes (renew, finish)
///   is conditional on `(id, lease token, state = exporting)`, so a worker that lost its lease changes
///   nothing.
/// - Any live worker rescues jobs whose lease expired (`rescueExpired`, one conditional update on the
///   database's clock): a dead machine's job runs again within `lease + 2 s` (the pool's rescue pass)
///   of its last renewal.
/// - `LISTEN/NOTIFY` wakes idle workers on submit (`reel_jobs`) and running jobs on cancel
///   (`reel_control`); the worker pool's polling covers lost notifications.
/// - Status files, the polled interface, are written atomically into `statusFolder` (a folder every
///   client can read, e.g. on shared storage) by whoever changes a job; the database is the truth.
///
/// Workers' wall clocks are never used for leases: only the database's `now()` and, for a worker
/// fencing itself when it cannot reach the database, its own monotonic clock.
public final class PostgresStore: JobStore {
    public struct Options: Sendable {
        /// Where status files go (nil: none are written).
        public var statusFolder: String?
        /// How long a lease lasts without renewal, on the database's clock.
        public var lease: Duration
        /// How often a worker renews its leases (and records progress).
        public var renew: Duration
        /// Connections in the pool (a worker: its jobs plus a few for claims and rescues).
        public var connections: Int
        /// Longest wait for an answer to a client's request (submit, status, cancel, …).
        public var requestTimeout: Duration
        /// Shown in `pg_stat_activity`.
        public var applicationName: String

        public init(
            statusFolder: String? = nil, lease: Duration = .seconds(30), renew: Duration = .seconds(1),
            connections: Int = 4, requestTimeout: Duration = .seconds(30), applicationName: String = "reel"
        ) {
            self.statusFolder = statusFolder
            self.lease = lease
            self.renew = renew
            self.connections = connections
            self.requestTimeout = requestTimeout
            self.applicationName = applicationName
        }
    }

    public let url: DatabaseURL
    let options: Options
    let client: PostgresClient
    let logger: Logger
    let statusFiles: StatusFolder?
    let notifications: Notifications
    private let running: Task<Void, Never>

    public var location: String { "database \(url)" }
    public var renewInterval: Duration { options.renew }
    public var leaseDuration: Duration? { options.lease }

    /// Opens a pool on the database at `url` (connections are made on first use).
    public init(url: DatabaseURL, options: Options = Options(), logger: Logger = Logger(label: "reel.fleet"))
        throws(QueueError)
    {
        guard options.lease >= .seconds(1), options.renew * 2 <= options.lease else {
            throw QueueError(.invalid, "a lease must last at least 1 s and at least two renewals")
        }
        self.url = url
        self.options = options
        self.logger = logger
        if let folder = options.statusFolder {
            statusFiles = try StatusFolder(path: folder, logger: logger)
        } else {
            statusFiles = nil
        }
        var configuration = url.clientConfiguration()
        configuration.options.maximumConnections = max(2, options.connections)
        configuration.options.connectTimeout = .seconds(5)
        configuration.options.additionalStartupParameters = [
            ("application_name", options.applicationName),
            // A transaction left open by a stuck client must not pin old row versions for long.
            ("idle_in_transaction_session_timeout", "60000"),
        ]
        var quiet = logger
        quiet.logLevel = .error
        let client = PostgresClient(configuration: configuration, backgroundLogger: quiet)
        self.client = client
        running = Task { await client.run() }
        notifications = Notifications(client: client, logger: logger)
    }

    /// Closes the pool and the listener. The store cannot be used afterwards.
    public func close() async {
        notifications.stop()
        running.cancel()
        await running.value
    }

    public func statusFile(for id: String) -> String? { statusFiles?.path(for: id) }

    // MARK: - Schema

    /// Applies the migrations the database lacks (see `Schema`); returns their versions.
    public func migrate() async throws -> [Int] {
        try await perform("migrate the schema", within: .seconds(600)) {
            try await Schema.migrate(self.client, logger: self.logger)
        }
    }

    /// The schema version the database is at, and the newest this build knows.
    public func schemaVersion() async throws -> (current: Int, latest: Int) {
        let current = try await perform("read the schema version") {
            try await Schema.version(self.client, logger: self.logger)
        }
        return (current, Schema.latest)
    }

    // MARK: - Running requests

    /// Runs one request against the database with a time limit, turning its failures into
    /// `QueueError`s a person can act on. The request runs in a task of its own: a connection that
    /// stopped answering cannot hold the caller past `limit`.
    func perform<T: Sendable>(
        _ what: String, within limit: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws(QueueError) -> T {
        let limit = limit ?? options.requestTimeout
        do {
            return try await Deadline.run(within: limit, body)
        } catch let error as Deadline.Expired {
            _ = error
            throw QueueError(
                .unavailable, "cannot \(what): the database at \(url) did not answer within \(limit.inSeconds) s")
        } catch {
            throw failure(error, what)
        }
    }

    /// A database error in words: the server's message, or why it could not be reached.
    func failure(_ error: any Error, _ what: String) -> QueueError {
        if let error = error as? QueueError { return error }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.beginError ?? error.commitError {
                return failure(inner, what)
            }
        }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? "error \(state)"
                if state == "42P01" {
                    return QueueError(
                        .unavailable,
                        "cannot \(what): the database \(url) has no Reel tables; run `reel db migrate --store \(url)`")
                }
                return QueueError(.unavailable, "cannot \(what) in \(url): \(message)")
            }
            let cause = error.underlying.map { ": \($0)" } ?? ""
            return QueueError(.unavailable, "cannot \(what): no connection to \(url) (\(error.code)\(cause))")
        }
        return QueueError(.unavailable, "cannot \(what) in \(url): \(error)")
    }

    /// Runs a query and decodes every row into a `Row`.
    func rows(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws -> [Row] {
        let sequence =
            if let connection {
                try await connection.query(query, logger: logger)
            } else {
                try await client.query(query, logger: logger)
            }
        var rows: [Row] = []
        for try await row in sequence { rows.append(try Row(row)) }
        return rows
    }

    /// Writes the status files of `rows` (best effort: the database is the truth).
    func publish(_ rows: [Row], durable: Bool = true) {
        guard let statusFiles else { return }
        for row in rows { statusFiles.write(row.status, durable: durable) }
    }

    func publish(_ status: JobStatus, durable: Bool = true) {
        statusFiles?.write(status, durable: durable)
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
