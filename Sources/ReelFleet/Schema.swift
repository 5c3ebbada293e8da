import Foundation
import Logging
import PostgresNIO
import ReelQueue

/// The fleet's tables, as numbered migrations. `reel db migrate` applies the ones a database lacks,
/// each in its own transaction under an advisory lock, and records them in `reel_schema_version`, so
/// running it twice, or on several machines at once, or while workers run, is safe.
///
/// Every migration runs inside its transaction, so none can build an index `CONCURRENTLY` (PostgreSQL
/// refuses that in a transaction): a later migration that must not block running workers needs the
/// runner to learn to run such a statement on its own first. Until then, migrations only add what
/// does not rewrite or long lock the table (columns with defaults PostgreSQL fills without a rewrite).
package enum Schema {
    /// One numbered migration: statements run in one transaction, recorded once they all ran.
    package struct Migration: Sendable {
        package let version: Int
        package let description: String
        package let statements: [String]

        package init(version: Int, description: String, statements: [String]) {
            self.version = version
            self.description = description
            self.statements = statements
        }
    }

    /// The advisory lock key migrations hold (any constant: "reel" in ASCII).
    static let lockKey: Int64 = 0x7265_656C

    static let migrations: [Migration] = [
        Migration(
            version: 1, description: "jobs, leases and the claim and listing indexes",
            statements: [
                """
                CREATE TABLE reel_jobs (
                    id text PRIMARY KEY,
                    -- submission order: first in, first out within a priority
                    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
                    key text UNIQUE,
                    spec jsonb NOT NULL,
                    -- the output path (spec.output with the id in it): one waiting or running job each
                    output text NOT NULL,
                    priority integer NOT NULL,
                    state text NOT NULL
                        CHECK (state IN ('waiting', 'exporting', 'completed', 'failed', 'cancelled')),
                    attempts integer NOT NULL DEFAULT 0,
                    max_attempts integer NOT NULL,
                    -- a waiting job backing off after a failure is claimable from this time
                    not_before timestamptz,
                    -- the lease: a fresh token per claim; every worker write is fenced on it
                    lease_token uuid,
                    worker text,
                    lease_expires timestamptz,
                    heartbeat_at timestamptz,
                    cancel_requested boolean NOT NULL DEFAULT false,
                    progress double precision NOT NULL DEFAULT 0,
                    phase text,
                    fps double precision,
                    eta_seconds double precision,
                    error jsonb,
                    result jsonb,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    started_at timestamptz,
                    finished_at timestamptz,
                    CHECK (state <> 'exporting' OR (lease_token IS NOT NULL AND lease_expires IS NOT NULL))
                ) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)
                """,
                // The claim walks this in run order and skips rows other claims hold. Heartbeats
                // change no indexed column, so they stay HOT updates (room left by fillfactor 80).
                "CREATE INDEX reel_jobs_claim ON reel_jobs (priority DESC, seq) WHERE state = 'waiting'",
                "CREATE INDEX reel_jobs_retries ON reel_jobs (not_before) WHERE state = 'waiting' AND not_before IS NOT NULL",
                "CREATE INDEX reel_jobs_listing ON reel_jobs (state, seq)",
                """
                CREATE UNIQUE INDEX reel_jobs_one_output ON reel_jobs (output)
                WHERE state IN ('waiting', 'exporting')
                """,
                "CREATE INDEX reel_jobs_finished ON reel_jobs (finished_at) WHERE finished_at IS NOT NULL",
            ]),
        // A nullable column without a default: PostgreSQL adds it without rewriting the table.
        Migration(
            version: 2, description: "per-rendition progress of ladder jobs",
            statements: ["ALTER TABLE reel_jobs ADD COLUMN renditions jsonb"]),
        Migration(
            version: 3, description: "photos done of a cache job's total",
            statements: ["ALTER TABLE reel_jobs ADD COLUMN items jsonb"]),
    ]

    /// The newest version this build knows.
    static var latest: Int { migrations.last?.version ?? 0 }

    /// Applies the migrations the database lacks; returns their versions (empty when it was current).
    static func migrate(_ link: DatabaseLink, applicationName: String, limit: Duration, logger: Logger)
        async throws -> [Int]
    {
        try await migrate(
            link, applicationName: applicationName, migrations: migrations, versionTable: "reel_schema_version",
            lockKey: lockKey, limit: limit, logger: logger)
    }

    /// Applies the `migrations` a database lacks, recording them in `versionTable`, one migrator at a time
    /// under the advisory lock `lockKey`: the queue's migrations above, and another module's own set
    /// (the photo library's) with a table and a lock of its own, so neither waits for nor renumbers the other.
    ///
    /// They run on a connection of their own whose time limits are `limit` (statements, lock waits and
    /// a transaction left idle): a migration may take long and waits for the one before it, and the
    /// pool's limits are a worker's, a few seconds, which a busy machine can stall its own client past
    /// between two statements.
    package static func migrate(
        _ link: DatabaseLink, applicationName: String, migrations: [Migration], versionTable: String, lockKey: Int64,
        limit: Duration, logger: Logger
    ) async throws -> [Int] {
        let milliseconds = "\(Int(limit / .milliseconds(1)))"
        let settings = [
            ("application_name", applicationName), ("statement_timeout", milliseconds), ("lock_timeout", milliseconds),
            ("idle_in_transaction_session_timeout", milliseconds),
        ]
        return try await link.withOwnConnection(settings: settings) { connection in
            var applied: [Int] = []
            for migration in migrations {
                let done = try await connection.checkedTransaction(logger: logger) { connection -> Bool in
                    // One migrator at a time, fleet-wide; the lock goes with the transaction.
                    try await connection.checkedQuery("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
                    try await connection.checkedQuery(
                        """
                        CREATE TABLE IF NOT EXISTS \(unescaped: versionTable) (
                            version integer PRIMARY KEY,
                            description text NOT NULL,
                            applied_at timestamptz NOT NULL DEFAULT now())
                        """, logger: logger)
                    let rows = try await connection.checkedQuery(
                        "SELECT 1 FROM \(unescaped: versionTable) WHERE version = \(migration.version)", logger: logger)
                    for try await _ in rows { return false }
                    for statement in migration.statements {
                        try await connection.checkedQuery(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.checkedQuery(
                        """
                        INSERT INTO \(unescaped: versionTable) (version, description)
                        VALUES (\(migration.version), \(migration.description))
                        """, logger: logger)
                    return true
                }
                if done { applied.append(migration.version) }
            }
            return applied
        }
    }

    /// The version the database is at (0 before the first migration).
    static func version(_ client: PostgresClient, logger: Logger) async throws -> Int {
        try await version(client, versionTable: "reel_schema_version", logger: logger)
    }

    /// The newest version recorded in `versionTable` (0 when it does not exist yet).
    package static func version(_ client: PostgresClient, versionTable: String, logger: Logger) async throws -> Int {
        let exists = try await client.checkedRows(
            "SELECT to_regclass(\(versionTable)) IS NOT NULL", logger: logger)
        guard try exists.first?.decode(Bool.self) == true else { return 0 }
        let rows = try await client.checkedRows(
            "SELECT coalesce(max(version), 0) FROM \(unescaped: versionTable)", logger: logger)
        return try rows.first?.decode(Int.self) ?? 0
    }
}
