import Foundation
import PostgresNIO
import ReelExport
import ReelQueue

extension PostgresStore {
    /// Adds a job and wakes idle workers (`NOTIFY reel_jobs`, in the same statement), or returns the
    /// job an idempotency key already names when the request is the same. `{id}` in the spec's output
    /// path becomes the job's id. Refused (`.conflict`) when the key names a different request, or
    /// when a waiting or running job already writes the same output (a unique index on the output of
    /// waiting and running rows decides, so two machines submitting at once cannot both win).
    public func submit(_ spec: JobSpec) async throws -> Submission {
        if let key = spec.key, let refusal = JobSpec.refuseKey(key) { throw refusal }
        let request = spec
        let submission = try await perform("submit a job") { () -> Submission in
            for _ in 0..<5 {
                let id = JobStatus.newID(Date())  // only a name: the queue's order is the database's
                var spec = spec
                spec.output = spec.output.replacingOccurrences(of: "{id}", with: id)
                // The store keeps a remote asset's query (its credential) for the workers; status
                // files and printed statuses leave it out.
                let specJSON = String(decoding: try RemoteAsset.storeEncoder.encode(spec), as: UTF8.self)
                let inserted: [Row]
                do {
                    inserted = try await self.rows(
                        """
                        WITH inserted AS (
                            INSERT INTO reel_jobs (id, key, spec, output, priority, state, max_attempts)
                            VALUES (\(id), \(spec.key), \(specJSON)::jsonb, \(spec.output), \(spec.priority), 'waiting',
                                    \(spec.maxAttempts))
                            ON CONFLICT (key) DO NOTHING
                            RETURNING *)
                        SELECT \(unescaped: Row.columns()), pg_notify(\(Notifications.jobs), '') AS notified
                        FROM inserted
                        """)
                } catch let error as PSQLError where Self.isOutputTaken(error) {
                    throw try await self.outputTaken(spec.output)
                }
                if let row = inserted.first { return Submission(status: row.status, created: true) }
                if let key = spec.key {
                    let existing = try await self.rows(
                        "SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE key = \(key)")
                    if let row = existing.first {
                        let differences = row.spec.differences(from: request, id: row.status.id)
                        guard differences.isEmpty else {
                            throw QueueError(
                                .conflict,
                                "the key '\(key)' already names job \(row.status.id) (\(row.status.state.rawValue)), which "
                                    + "differs in \(differences.joined(separator: ", ")); use a new key for a different "
                                    + "export, or 'reel retry \(row.status.id)' to run that job again")
                        }
                        return Submission(status: row.status, created: false)
                    }
                }
                // The key's job was pruned in between: try again.
            }
            throw QueueError(.conflict, "cannot submit: the key \(spec.key ?? "") keeps changing hands")
        }
        if submission.created { publish(submission.status) }
        return submission
    }

    /// Whether a database error is the one-job-per-output index refusing a row.
    static func isOutputTaken(_ error: PSQLError) -> Bool {
        error.serverInfo?[.sqlState] == "23505" && error.serverInfo?[.constraintName] == "reel_jobs_one_output"
    }

    /// The conflict naming the waiting or running job that writes `output`.
    func outputTaken(_ output: String) async throws -> QueueError {
        let holder = try await rows(
            """
            SELECT \(unescaped: Row.columns()) FROM reel_jobs
            WHERE output = \(output) AND state IN ('waiting', 'exporting')
            """
        ).first
        guard let holder else { return QueueError(.conflict, "\(output) was just taken by another job") }
        return QueueError(
            .conflict,
            "\(output) is already the output of job \(holder.status.id) (\(holder.status.state.rawValue)); wait for it, "
                + "cancel it, or choose another output")
    }

    public func status(_ id: String) async throws -> JobStatus? {
        try await perform("read the status of \(id)") {
            try await self.rows("SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE id = \(id)").first?.status
        }
    }

    /// Every job (or those in one state), in submission order.
    public func list(state: JobState?) async throws -> [JobStatus] {
        try await perform("list jobs") {
            let rows =
                if let state {
                    try await self.rows(
                        "SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE state = \(state.rawValue) ORDER BY seq"
                    )
                } else {
                    try await self.rows("SELECT \(unescaped: Row.columns()) FROM reel_jobs ORDER BY seq")
                }
            return rows.map(\.status)
        }
    }

    /// Cancels a job. A waiting job, or one whose worker's lease has expired, is cancelled at once; a
    /// running job gets a cancel request its worker sees at its next renewal, and sooner through
    /// `NOTIFY reel_control` (sent when the transaction commits).
    public func cancel(_ id: String) async throws -> CancelResult {
        let (result, status) = try await perform("cancel \(id)") { () -> (CancelResult, JobStatus?) in
            try await self.client.checkedTransaction(logger: self.logger) { connection -> (CancelResult, JobStatus?) in
                let found = try await self.rows(
                    """
                    SELECT \(unescaped: Row.columns()), now() AS db_now
                    FROM reel_jobs WHERE id = \(id) FOR UPDATE
                    """, on: connection)
                guard let row = found.first, let now = row.databaseNow else { return (.notFound, nil) }
                var status = row.status
                if status.state.isTerminal { return (.alreadyEnded(status.state), nil) }
                if status.state == .exporting, try await self.leaseIsLive(id, on: connection) {
                    let requested = try await self.rows(
                        """
                        UPDATE reel_jobs SET cancel_requested = true WHERE id = \(id)
                        RETURNING \(unescaped: Row.columns()), pg_notify(\(Notifications.control), id) AS notified
                        """, on: connection)
                    return (.requested, requested.first?.status)
                }
                // Waiting, or exporting for a dead worker (its lease expired): taken from that worker.
                status.cancelWhileWaiting(now: now)
                let updated = try await self.rows(try Row.update(status, takingOver: true), on: connection)
                return (.cancelled, updated.first?.status)
            }
        }
        if let status { publish(status) }
        return result
    }

    /// Whether a running job's lease is still in force (its worker may be alive).
    private func leaseIsLive(_ id: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.checkedQuery(
            "SELECT coalesce(lease_expires > now(), false) FROM reel_jobs WHERE id = \(id)", logger: logger)
        for try await live in rows.decode(Bool.self) { return live }
        return false
    }

    /// Queues a failed or cancelled job again with a fresh set of attempts, and wakes idle workers.
    public func retry(_ id: String) async throws -> JobStatus {
        let status = try await perform("retry \(id)") { () -> JobStatus in
            do {
                return try await self.requeue(id)
            } catch let error as PSQLError where Self.isOutputTaken(error) {
                let output = try await self.rows("SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE id = \(id)")
                    .first?.spec.output
                throw try await self.outputTaken(output ?? "")
            }
        }
        publish(status)
        return status
    }

    /// The transaction of `retry`.
    private func requeue(_ id: String) async throws -> JobStatus {
        try await self.client.checkedTransaction(logger: self.logger) { connection -> JobStatus in
            let found = try await self.rows(
                "SELECT \(unescaped: Row.columns()), now() AS db_now FROM reel_jobs WHERE id = \(id) FOR UPDATE",
                on: connection)
            guard let row = found.first, let now = row.databaseNow else {
                throw QueueError(.notFound, "no job \(id)")
            }
            var status = row.status
            if status.state == .exporting { throw QueueError(.conflict, "job \(id) is running") }
            guard status.state == .failed || status.state == .cancelled else {
                throw QueueError(
                    .conflict, "job \(id) is \(status.state.rawValue); only failed or cancelled jobs can be retried"
                )
            }
            status.requeue(now: now)
            let updated = try await self.rows(try Row.update(status), on: connection)
            try await connection.checkedQuery("SELECT pg_notify(\(Notifications.jobs), '')", logger: self.logger)
            return updated.first?.status ?? status
        }
    }

    /// Deletes jobs that ended (in one of `states`) before `cutoff`, a thousand rows a statement, and
    /// their status files; their keys and outputs are free again. The age is measured on the
    /// database's clock (`now()` minus how long before this machine's now `cutoff` is), so a wrong
    /// clock on the machine that prunes cannot delete recent jobs early.
    @discardableResult
    public func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int {
        let names = states.filter(\.isTerminal).map(\.rawValue).sorted()
        guard !names.isEmpty else { return 0 }
        let age = Date().timeIntervalSince(cutoff)
        var deleted = 0
        while true {
            let ids = try await perform("prune finished jobs") { () -> [String] in
                let rows = try await self.client.checkedRows(
                    """
                    DELETE FROM reel_jobs WHERE id IN (
                        SELECT id FROM reel_jobs
                        WHERE state = ANY(\(names)) AND finished_at < now() - make_interval(secs => \(age))
                        LIMIT 1000)
                    RETURNING id
                    """, logger: self.logger)
                return try rows.map { try $0.decode(String.self) }
            }
            if let statusFiles { for id in ids { unlink(statusFiles.path(for: id)) } }
            deleted += ids.count
            if ids.count < 1000 { return deleted }
        }
    }

    /// What is left: a job claimable now, the next retry's due time (on this machine's clock, from
    /// the database's "in how long"), a job running anywhere.
    public func pendingWork() async throws -> PendingWork {
        try await perform("look for pending work") {
            let rows = try await self.client.checkedRows(
                """
                SELECT
                    EXISTS (SELECT 1 FROM reel_jobs WHERE state = 'waiting'
                            AND (not_before IS NULL OR not_before <= now())),
                    extract(epoch FROM (SELECT min(not_before) FROM reel_jobs
                                        WHERE state = 'waiting' AND not_before > now()) - now())::float8,
                    EXISTS (SELECT 1 FROM reel_jobs WHERE state = 'exporting')
                """, logger: self.logger)
            for row in rows {
                let (waiting, retryIn, running) = try row.decode((Bool, Double?, Bool).self)
                return PendingWork(
                    waiting: waiting, nextRetry: retryIn.map { Date().addingTimeInterval($0) }, running: running)
            }
            return PendingWork(waiting: false, nextRetry: nil, running: false)
        }
    }
}
