import Foundation
import Logging
import PostgresNIO
import ReelExport
import ReelQueue
import ServiceLifecycle
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
///
/// Time limits hold on both sides: the store stops waiting for an answer at its request's limit, and
/// every connection tells the server the worker's limit (`statement_timeout` and
/// `idle_in_transaction_session_timeout`: `Options.workerTimeout`, by default a third of the lease
/// and at most 10 s;
/// `lock_timeout`: half that), so a query the store gave up on does not run on, or keep its row
/// locks, on the server. (A client's request, `requestTimeout`, may make several statements.)
/// A database that refuses connections fails a request within about half a second, and a request
/// after it at once; once it answers again, the next request (and, within half a second, the
/// store's own probe) finds it (see `DatabaseLink`).
///
/// Its connection pool runs while `run()` runs (the store is a swift-service-lifecycle `Service`):
/// - a long-lived host lists the store first in its `ServiceGroup`, so that the group shuts it down
///   last, after the workers stopped claiming and handed their jobs back. (Do not cancel such a
///   group to stop it: cancellation reaches the store at the same time as the workers, which then
///   cannot record anything. Stop the pool instead, `WorkerPool.stop(cancelRunning: true)`.)
/// - with `Options.lifecycle` `.standalone` (the default) the store runs it itself, from `init` until
///   `close()`: for a short-lived client that makes a few requests and exits.
public final class PostgresStore: JobStore, Service {
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
        /// Whether workers listen for notifications (`LISTEN`); without them they poll only, which
        /// connection poolers in transaction mode (they cannot LISTEN) need. The CLI sets it from
        /// `REEL_FLEET_LISTEN`.
        public var listen: Bool
        /// Who runs the connection pool (see the type's description).
        public var lifecycle: Lifecycle
        /// How long a retryable failure waits before its next attempt.
        public var retryBackoff: RetryBackoff
        /// The time limit of a worker's requests (claim, renew, finish, rescue), which every connection
        /// also gives the server (see the type's description). nil: a third of the lease, at most 10 s.
        /// At most a third of the lease, so that a renewal the database could not answer in time
        /// leaves the worker time to try again before its lease runs out.
        public var workerTimeout: Duration?

        /// `workerTimeout`, or its default for `lease`.
        var workerLimit: Duration { workerTimeout ?? min(.seconds(10), lease / 3) }

        public init(
            statusFolder: String? = nil, lease: Duration = .seconds(30), renew: Duration = .seconds(1),
            connections: Int = 4, requestTimeout: Duration = .seconds(30), applicationName: String = "reel",
            listen: Bool = true, lifecycle: Lifecycle = .standalone, retryBackoff: RetryBackoff = .standard,
            workerTimeout: Duration? = nil
        ) {
            self.retryBackoff = retryBackoff
            self.workerTimeout = workerTimeout
            self.statusFolder = statusFolder
            self.lease = lease
            self.renew = renew
            self.connections = connections
            self.requestTimeout = requestTimeout
            self.applicationName = applicationName
            self.listen = listen
            self.lifecycle = lifecycle
        }
    }

    /// Who runs the store's connection pool.
    public enum Lifecycle: Sendable {
        /// The store itself, from `init` until `close()`.
        case standalone
        /// The host, calling `run()` (in a `ServiceGroup`, before the services that use the store).
        case service
    }

    public let url: DatabaseURL
    package let options: Options
    package let link: DatabaseLink
    package let logger: Logger
    let statusFiles: StatusFolder?
    let notifications: Notifications
    /// When a running job's status file is rewritten (with progress at most four times a second, a
    /// heartbeat at least every 5 s), as the spool does.
    let statusSchedule: StatusFileSchedule
    /// The store's own run, with `.standalone`.
    private let running = Mutex<Task<Void, Never>?>(nil)

    /// The pool requests use now (a new one after the database refused connections and came back).
    package var client: PostgresClient { link.client }

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
        if let limit = options.workerTimeout, limit <= .zero || limit * 3 > options.lease {
            throw QueueError(.invalid, "a worker's time limit must be above 0 and at most a third of the lease")
        }
        self.url = url
        self.options = options
        statusSchedule = StatusFileSchedule(renewInterval: options.renew)
        self.logger = logger
        if let folder = options.statusFolder {
            statusFiles = try StatusFolder(path: folder, logger: logger)
        } else {
            statusFiles = nil
        }
        var configuration = url.clientConfiguration()
        configuration.options.maximumConnections = max(2, options.connections)
        configuration.options.connectTimeout = .seconds(5)
        // The server enforces the worker's time limit too: postgres-nio sends no cancel for a query
        // its caller gave up on, so without these a timed-out claim, rescue or finish would go on
        // running, or waiting for a lock, or sit in its transaction, holding row locks until it ended.
        // A wait for a lock gives up at half the limit, so that it fails as what it is (a lock held
        // elsewhere) rather than as a statement that ran too long. (Migrations set their own.)
        let limit = options.workerLimit
        let milliseconds = { (duration: Duration) in "\(Int((duration / .milliseconds(1)).rounded()))" }
        configuration.options.additionalStartupParameters = [
            ("application_name", options.applicationName), ("statement_timeout", milliseconds(limit)),
            ("lock_timeout", milliseconds(limit / 2)), ("idle_in_transaction_session_timeout", milliseconds(limit)),
        ]
        let notified = Mutex<Notifications?>(nil)
        let link = DatabaseLink(
            url: url, configuration: configuration,
            linger: max(options.requestTimeout, options.workerLimit) + .seconds(1),
            logger: logger, onRecovered: { notified.withLock { $0 }?.wakeWorkers() })
        self.link = link
        notifications = Notifications(link: link, enabled: options.listen, logger: logger)
        notified.withLock { $0 = notifications }
        if options.lifecycle == .standalone {
            running.withLock { $0 = Task { [self] in try? await run() } }
        }
    }

    /// Runs the connection pool and, once a worker claims, the notification listener, until graceful
    /// shutdown, cancellation or `close()`. Run it once (only with `Options.lifecycle` `.service`:
    /// otherwise the store runs it itself).
    public func run() async throws {
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.link.run() }
                group.addTask { await self.notifications.run() }
            }
        } onGracefulShutdown: {
            self.stop()
        }
    }

    private func stop() {
        notifications.stop()
        link.stop()
    }

    /// Closes the pool and the listener, and returns once they are closed (with `.standalone`; with
    /// `.service`, `run()` returns). The store cannot be used afterwards.
    public func close() async {
        stop()
        await running.withLock { $0 }?.value
    }

    public func statusFile(for id: String) -> String? { statusFiles?.path(for: id) }

    // MARK: - Schema

    /// Applies the migrations the database lacks (see `Schema`); returns their versions.
    public func migrate() async throws -> [Int] {
        try await perform("migrate the schema", within: .seconds(600)) {
            try await Schema.migrate(
                self.link, applicationName: self.options.applicationName, limit: .seconds(600), logger: self.logger)
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
    /// stopped answering cannot hold the caller past `limit`; a database that refuses connections
    /// fails it within `DatabaseLink.probeAfter` (at once once known).
    package func perform<T: Sendable>(
        _ what: String, within limit: Duration? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws(QueueError) -> T {
        let limit = limit ?? options.requestTimeout
        do {
            return try await Deadline.run(within: limit) { try await self.link.guarded(body) }
        } catch let error as Deadline.Expired {
            _ = error
            throw QueueError(
                .unavailable, "cannot \(what): the database at \(url) did not answer within \(limit / .seconds(1)) s")
        } catch {
            throw failure(error, what)
        }
    }

    /// A database error in words: the server's message, or why it could not be reached.
    func failure(_ error: any Error, _ what: String) -> QueueError {
        if let error = error as? QueueError { return error }
        if let error = error as? DatabaseLink.Refused { return QueueError(.unavailable, "cannot \(what): \(error)") }
        if let error = error as? CommitFailed { return failure(error.underlying, what) }
        if error is ConnectionClosed {
            return QueueError(
                .unavailable,
                "cannot \(what): the database at \(url) closed the connection (\(ConnectionClosed.reasons))")
        }
        if let error = error as? PSQLError {
            if let state = error.serverInfo?[.sqlState] {
                let message = error.serverInfo?[.message] ?? "error \(state)"
                // No table, or a column a later migration adds: the database is behind this build.
                if state == "42P01" {
                    return QueueError(
                        .unavailable,
                        "cannot \(what): the database \(url) has no Reel tables; run `reel db migrate --store \(url)`")
                }
                // A column a later migration adds: the database is behind this build.
                if state == "42703" {
                    return QueueError(
                        .unavailable,
                        "cannot \(what): the database \(url) lacks a migration this reel needs (\(message)); run `reel db migrate --store \(url)`"
                    )
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
        guard let connection else { return try await client.checkedRows(query, logger: logger).map { try Row($0) } }
        var rows: [Row] = []
        for try await row in try await connection.checkedQuery(query, logger: logger) { rows.append(try Row(row)) }
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
