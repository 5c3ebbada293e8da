import Foundation
import PostgresNIO
import ReelExport
import ReelQueue

extension PostgresStore {
    /// How long a worker's request may take before the worker treats the database as unreachable:
    /// `Options.workerTimeout`, by default a third of the lease (at most 10 s), so a worker that cannot
    /// renew still fences itself in time.
    /// Every connection gives its statements this long on the server too (see `init`).
    var workerTimeout: Duration { options.workerLimit }

    /// Takes the most urgent claimable job in one statement: the row is locked with `SKIP LOCKED`
    /// (concurrent claims take the next one instead of waiting), then given a fresh lease token, this
    /// worker's name, a deadline on the database's clock and its next attempt.
    public func claim(worker: String) async throws -> Lease? {
        notifications.start()
        let lease = options.lease / .seconds(1)
        let claimed = try await perform("claim a job", within: workerTimeout) {
            try await self.rows(
                """
                WITH next AS MATERIALIZED (
                    SELECT id FROM reel_jobs
                    WHERE state = 'waiting' AND (not_before IS NULL OR not_before <= now())
                    ORDER BY priority DESC, seq
                    LIMIT 1
                    FOR UPDATE SKIP LOCKED)
                UPDATE reel_jobs AS j SET
                    state = 'exporting', attempts = j.attempts + 1, lease_token = gen_random_uuid(),
                    worker = \(worker), lease_expires = now() + make_interval(secs => \(lease)),
                    heartbeat_at = now(), cancel_requested = false, progress = 0,
                    phase = \(ExportSession.Phase.transcoding.rawValue),
                    fps = NULL, eta_seconds = NULL, renditions = NULL, items = NULL, started_at = now(),
                    updated_at = now(),
                    not_before = NULL
                FROM next
                WHERE j.id = next.id
                RETURNING \(unescaped: Row.columns("j"))
                """
            ).first
        }
        guard let claimed, let token = claimed.leaseToken else { return nil }
        notifications.watch(claimed.status.id)
        publish(claimed.status)
        statusSchedule.wrote(token, heartbeat: claimed.status.heartbeatAt)
        logger.debug(
            "claimed",
            metadata: ["job": "\(claimed.status.id)", "attempt": .stringConvertible(claimed.status.attempts)])
        return Lease(
            id: claimed.status.id, attempt: claimed.status.attempts, token: token, worker: worker, spec: claimed.spec)
    }

    /// Extends the lease to `now() + lease` on the database's clock and records progress, only while
    /// the lease is this worker's (`id`, token, still exporting): no row back means it was lost. The
    /// answer comes from the row itself, never from a cache, so a publish gate can trust `.held`.
    /// The status file is rewritten when `StatusFileSchedule` says, with progress or without, so its
    /// `heartbeatAt` is never older than 5 s while the worker renews (as `JobStatus.heartbeatAt`
    /// promises; the spool keeps the same promise).
    public func renew(_ lease: Lease, progress: JobProgress?) async throws -> LeaseState {
        guard let token = UUID(uuidString: lease.token) else { return .lost }
        // The shared rounding of a progress report (JobStatus.record).
        var rounded = JobStatus(id: lease.id, spec: lease.spec, now: Date())
        if let progress { rounded.record(progress, now: Date()) }
        let report = rounded
        let renditions = try report.renditions.map(JSONCoding.text)
        let items = try report.items.map(JSONCoding.text)
        let seconds = options.lease / .seconds(1)
        let hasProgress = progress != nil
        let renewed = try await perform("renew the lease of \(lease.id)", within: workerTimeout) {
            try await self.rows(
                """
                UPDATE reel_jobs SET
                    lease_expires = now() + make_interval(secs => \(seconds)), heartbeat_at = now(),
                    progress = CASE WHEN \(hasProgress) THEN \(report.progress) ELSE progress END,
                    phase = CASE WHEN \(hasProgress) THEN \(report.phase?.rawValue) ELSE phase END,
                    fps = CASE WHEN \(hasProgress) THEN \(report.fps) ELSE fps END,
                    eta_seconds = CASE WHEN \(hasProgress) THEN \(report.etaSeconds) ELSE eta_seconds END,
                    renditions = CASE WHEN \(hasProgress) THEN \(renditions)::jsonb ELSE renditions END,
                    items = CASE WHEN \(hasProgress) THEN \(items)::jsonb ELSE items END,
                    updated_at = CASE WHEN \(hasProgress) THEN now() ELSE updated_at END
                WHERE id = \(lease.id) AND lease_token = \(token) AND state = 'exporting'
                RETURNING \(unescaped: Row.columns())
                """
            ).first
        }
        guard let renewed else {
            notifications.unwatch(lease.id)
            statusSchedule.forget(lease.token)
            return .lost
        }
        if statusSchedule.isDue(lease.token, hasProgress: hasProgress, heartbeat: renewed.status.heartbeatAt) {
            publish(renewed.status, durable: false)
        }
        return renewed.cancelRequested ? .cancelRequested : .held
    }

    /// Sleeps until the next renewal is due, or until a `reel_control` notification says the job
    /// changed (a cancel), so a cancel reaches a running job in milliseconds; without notifications
    /// it still arrives with the next renewal.
    public func waitToRenew(_ lease: Lease) async {
        await notifications.waitForNews(of: lease.id, timeout: renewInterval)
    }

    /// Records the outcome through the shared state machine (`JobStatus.end`), in one transaction that
    /// first locks the row only if the lease is still this worker's. A commit whose answer was lost is
    /// checked against the row (`outcomeRecorded`): the outcome is either recorded or not, never twice.
    @discardableResult
    public func finish(_ lease: Lease, _ outcome: JobOutcome) async throws -> Bool {
        guard let token = UUID(uuidString: lease.token) else { return false }
        defer {
            notifications.unwatch(lease.id)
            statusSchedule.forget(lease.token)
        }
        let recorded = try await perform("record the outcome of \(lease.id)", within: workerTimeout) {
            () -> JobStatus? in
            do {
                return try await self.client.checkedTransaction(logger: self.logger) { connection -> JobStatus? in
                    let found = try await self.rows(
                        """
                        SELECT \(unescaped: Row.columns()), now() AS db_now FROM reel_jobs
                        WHERE id = \(lease.id) AND lease_token = \(token) AND state = 'exporting'
                        FOR UPDATE
                        """, on: connection)
                    guard let row = found.first, let now = row.databaseNow else { return nil }
                    var status = row.status
                    // A job handed back at shutdown that someone asked to cancel meanwhile ends cancelled.
                    let outcome = outcome == .handBack && row.cancelRequested ? .cancelled : outcome
                    let next = status.end(outcome, now: now, backoff: self.options.retryBackoff.delay(afterAttempts:))
                    let updated = try await self.rows(try Row.update(status), on: connection)
                    if next == .waiting {
                        try await connection.checkedQuery(
                            "SELECT pg_notify(\(Notifications.jobs), '')", logger: self.logger)
                    }
                    return updated.first?.status
                }
            } catch let error as CommitFailed {
                guard let status = try await self.outcomeRecorded(by: lease) else { throw error }
                return status
            }
        }
        guard let recorded else {
            logger.warning("lost the lease; not recording the outcome", metadata: ["job": "\(lease.id)"])
            return false
        }
        publish(recorded)
        logger.recordedOutcome(recorded)
        return true
    }

    /// After a commit whose answer was lost: the row as this lease's `finish` left it, or nil when the
    /// row does not show that finish (it still runs under this lease, or someone else changed it since).
    /// A finish keeps the lease's token on the row; everyone else who takes a job from its worker (a
    /// rescue, a cancel of a dead worker's job, a new claim) clears or replaces it, so the token alone
    /// says whose change the row shows.
    func outcomeRecorded(by lease: Lease) async throws -> JobStatus? {
        guard let token = UUID(uuidString: lease.token) else { return nil }
        let row = try await rows(
            "SELECT \(unescaped: Row.columns()) FROM reel_jobs WHERE id = \(lease.id) AND lease_token = \(token)"
        ).first
        guard let row, row.status.state != .exporting else { return nil }
        return row.status
    }

    /// One conditional update on the database's clock: every job whose lease has expired goes back to
    /// waiting, or fails once its attempts are used up (a poison job), or ends cancelled if a cancel
    /// was asked. Safe to run on every worker at once: a row renewed or finished meanwhile no longer
    /// matches when the update re-reads it. Which way each job goes is decided here; what that way
    /// writes (state, error code and message) is `JobStatus.orphaned`'s, bound as values (`Rescue`).
    /// The lease token is cleared, so the dead attempt's worker, should it wake, finds nothing of its
    /// own (`outcomeRecorded`). Removes each dead attempt's temporary output (outputs are on storage
    /// every worker sees).
    @discardableResult
    public func rescueExpired() async throws -> Int {
        let (cancelled, poisoned, requeued) = (Rescue.cancelled, Rescue.poisoned, Rescue.requeued)
        let rescued = try await perform("rescue jobs of dead workers", within: workerTimeout) { () -> [Row] in
            let rows = try await self.rows(
                """
                UPDATE reel_jobs AS j SET
                    state = way.state,
                    error = replace(way.error, \(String(Rescue.attemptsMarker)), j.attempts::text)::jsonb,
                    finished_at = CASE WHEN way.ended THEN now() END,
                    progress = CASE WHEN way.ended THEN j.progress ELSE 0 END,
                    renditions = CASE WHEN way.ended THEN j.renditions END,
                    items = CASE WHEN way.ended THEN j.items END,
                    worker = NULL, phase = NULL, fps = NULL, eta_seconds = NULL, lease_token = NULL,
                    lease_expires = NULL, heartbeat_at = NULL, cancel_requested = false, updated_at = now()
                FROM (VALUES
                    ('cancel', \(cancelled.state)::text, \(cancelled.error)::text, \(cancelled.ended)::boolean),
                    ('poison', \(poisoned.state)::text, \(poisoned.error)::text, \(poisoned.ended)::boolean),
                    ('requeue', \(requeued.state)::text, \(requeued.error)::text, \(requeued.ended)::boolean)
                ) AS way (name, state, error, ended)
                WHERE j.state = 'exporting' AND j.lease_expires < now()
                    AND way.name = CASE WHEN j.cancel_requested THEN 'cancel'
                                        WHEN j.attempts >= j.max_attempts THEN 'poison'
                                        ELSE 'requeue' END
                RETURNING \(unescaped: Row.columns("j"))
                """)
            if rows.contains(where: { $0.status.state == .waiting }) {
                _ = try await self.client.checkedRows(
                    "SELECT pg_notify(\(Notifications.jobs), '')", logger: self.logger)
            }
            return rows
        }
        publish(rescued)
        for row in rescued {
            // The dead attempt's temporary output, and only its own (a new attempt may already write
            // its own beside it): a worker killed with its export in process leaves one behind.
            let tag = Lease(id: row.status.id, attempt: row.status.attempts, token: "", worker: "", spec: row.spec)
                .attemptTag
            if row.spec.writesFolder {
                // A ladder's or a thumbnail set's is a folder: removed unless its writer still holds its lock.
                TemporaryOutput.removeLeftovers(for: URL(fileURLWithPath: row.spec.output))
            } else {
                unlink(TemporaryOutput.url(for: URL(fileURLWithPath: row.spec.output), tag: tag).path)
            }
            notifications.unwatch(row.status.id)
            logger.warning(
                "rescued a job whose worker's lease expired",
                metadata: ["job": "\(row.status.id)", "state": "\(row.status.state.rawValue)"])
        }
        return rescued.count
    }

    /// Sleeps until `NOTIFY reel_jobs` (a submit, a retry, a job handed back or rescued) or `timeout`.
    public func waitForWork(timeout: Duration) async {
        notifications.start()
        await notifications.waitForWork(timeout: timeout)
    }

    /// Sleeps for `timeout`, or until the database answers again after refusing connections (its
    /// probe then wakes the workers waiting for work), so that claims resume at once.
    public func waitForRecovery(timeout: Duration) async {
        let start = ContinuousClock.now
        await notifications.waitForWork(timeout: timeout)
        // Woken by something else while the database still refuses (or the store stopped): sleep on.
        if link.isRefusing || notifications.isStopped {
            try? await Task.sleep(until: start + timeout, clock: .continuous)
        }
    }
}

/// What a rescue writes for each way a job whose worker died can go, taken from the state machine
/// (`JobStatus.orphaned`, applied to a job in that situation) rather than written out again in SQL:
/// the state, the error (JSON, `attemptsMarker` where the attempt count goes) and whether the job
/// ended. Which way a job goes (a cancel asked, attempts used up, otherwise) is the rescue's SQL.
enum Rescue {
    struct Outcome: Sendable {
        let state: String
        let error: String
        let ended: Bool
    }

    /// A cancel was asked: cancelled.
    static let cancelled = outcome(cancelRequested: true, attemptsLeft: true)
    /// Its attempts are used up: failed as a poison job.
    static let poisoned = outcome(cancelRequested: false, attemptsLeft: false)
    /// Otherwise: waiting again.
    static let requeued = outcome(cancelRequested: false, attemptsLeft: true)

    /// An attempt count no job reaches, so its digits in a message mark where the count goes.
    static let attemptsMarker = 987_654_321

    private static func outcome(cancelRequested: Bool, attemptsLeft: Bool) -> Outcome {
        var status = JobStatus(
            id: "j0", spec: JobSpec(asset: "", preset: "", outputType: .mp4, output: ""), now: .distantPast)
        status.state = .exporting
        status.attempts = attemptsMarker
        status.maxAttempts = attemptsLeft ? attemptsMarker + 1 : attemptsMarker
        let next = status.orphaned(cancelRequested: cancelRequested, now: .distantPast)
        let error = (try? JSONCoding.text(status.error)) ?? "null"
        return Outcome(state: status.state.rawValue, error: error, ended: next == .ended)
    }
}
