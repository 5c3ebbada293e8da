import Foundation
import Logging
import PostgresNIO
import ReelExport
import ReelQueue
import Synchronization
import TestSupport
import Testing

@testable import ReelFleet

/// How the PostgreSQL store fails safe: a rescued row is never taken for one's own outcome; the
/// server drops what the store gave up on; a refused connection fails at once and a returning
/// database is found again; a running job's status file keeps its heartbeat.
@Suite("PostgreSQL store: failing safe", .tags(.media, .postgres), .serialized, .timeLimit(.minutes(6)))
struct PostgresFailSafeTests {
    /// A store whose worker requests have 1 s (a 3 s lease), on a fresh database of `server`.
    static func store(on server: PostgresServer? = nil, lease: Duration = .seconds(3), workerTimeout: Duration? = nil)
        async throws -> PostgresStore
    {
        let harness = PostgresHarness(
            options: PostgresStore.Options(
                lease: lease, renew: .seconds(1), requestTimeout: .seconds(30), workerTimeout: workerTimeout))
        if let server {
            var options = harness.options
            options.statusFolder = Fixtures.scratchFolder("status").path
            let store = try PostgresStore(url: try DatabaseURL(try await server.makeDatabase()), options: options)
            _ = try await store.migrate()
            return store
        }
        return try await harness.makeStore() as! PostgresStore
    }

    /// A job for the store alone: no worker runs it, so its asset need not exist (and no fixture need
    /// be made first, which on a loaded machine can take minutes).
    static func spec() -> JobSpec {
        JobSpec(
            asset: "/nonexistent/in.mp4", preset: "LowQuality", outputType: .mp4,
            output: Fixtures.folder.appendingPathComponent("never-{id}.mp4").path)
    }

    /// Runs `body` on a connection of the test's own, with none of the store's time limits, and closes
    /// it however `body` ends. A connection dropped open (a test that throws halfway, as a request
    /// timing out on a loaded machine does) fails postgres-nio's assertion in `PostgresConnection.deinit`
    /// and crashes the whole test process, every other suite's results with it.
    /// (The link's own connection, started with no settings in place of the store's.)
    @discardableResult
    static func withConnection<T: Sendable>(
        to store: PostgresStore, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await store.link.withOwnConnection(connectTimeout: .seconds(10), settings: [], body)
    }

    static let log = Logger(label: "test")

    @Test func aLostCommitIsNeverTakenForOneAfterSomeoneElseTookTheJob() async throws {
        // Nothing here is timed (dead workers' leases are moved into the past): a minute per request,
        // so that a busy test machine cannot fail a claim (1 s with the suite's 3 s lease).
        let store = try await Self.store(lease: .seconds(180), workerTimeout: .seconds(60))
        let first = try await store.submit(Self.spec()).status.id
        let second = try await store.submit(Self.spec()).status.id
        let rescued = try #require(try await store.claim(worker: "w"))
        let cancelled = try #require(try await store.claim(worker: "w"))
        #expect(rescued.id == first && cancelled.id == second)
        // A job whose worker died and was rescued; another whose dead worker's job was cancelled.
        try await PostgresHarness().killWorker(holding: rescued, in: store)
        #expect(try await store.rescueExpired() == 1)
        try await PostgresHarness().killWorker(holding: cancelled, in: store)
        #expect(try await store.cancel(second) == .cancelled)
        #expect(try await store.status(first)?.state == .waiting)
        #expect(try await store.status(second)?.state == .cancelled)
        // What `finish` reads after a commit whose answer was lost: neither row shows that lease's outcome.
        #expect(try await store.outcomeRecorded(by: rescued) == nil)
        #expect(try await store.outcomeRecorded(by: cancelled) == nil)
        // While a finish of its own is recognised.
        let again = try #require(try await store.claim(worker: "w"))
        #expect(try await store.finish(again, .completed(JobStoreFixtures.result)))
        #expect(try await store.outcomeRecorded(by: again)?.state == .completed)
        await store.close()
    }

    /// postgres-nio 1.33 waits forever for the answer to a query written to a connection the server has
    /// closed. A transaction the server ended (its client idle past the store's limit, as a busy machine
    /// can make it) fails at once with the reason, and the next request gets a live connection.
    @Test func aTransactionTheServerClosedFailsAtOnceAndTheNextRequestWorks() async throws {
        let store = try await Self.store()
        let failure = await Self.error {
            try await store.perform("hold a transaction idle") { try await Self.idle(store) }
        }
        #expect(failure?.kind == .unavailable)
        #expect(failure?.message.contains("closed the connection") == true, "\(String(describing: failure))")
        #expect(try await store.list(state: nil).isEmpty)
        _ = try await store.submit(Self.spec())
        #expect(try await store.list(state: nil).count == 1)
        await store.close()
    }

    /// What closes the race `checkedQuery`'s first look leaves open (a close after the look, before the
    /// write): the watch calls every handler waiting on a connection when it closes, and a handler
    /// added after the close at once; a handler removed before is not called.
    @Test func aConnectionsCloseReachesEveryQueryWaitingOnIt() async throws {
        let store = try await Self.store()
        try await Self.withConnection(to: store) { connection in
            let called = Mutex<[String]>([])
            let watch = ClosedConnectionWatch.shared
            _ = watch.watch(connection) { called.withLock { $0.append("first") } }
            _ = watch.watch(connection) { called.withLock { $0.append("second") } }
            let removed = watch.watch(connection) { called.withLock { $0.append("removed") } }
            watch.unwatch(connection, removed)
            // The server ends the session (as idle_in_transaction_session_timeout or a restart would).
            let pid = try await connection.checkedQuery("SELECT pg_backend_pid()", logger: Self.log).collect().first?
                .decode(Int32.self)
            try await Self.withConnection(to: store) { other in
                try await other.checkedQuery("SELECT pg_terminate_backend(\(try #require(pid)))", logger: Self.log)
            }
            let closed = await eventually(within: .seconds(30), every: .milliseconds(50)) {
                called.withLock { $0.count == 2 } ? true : nil
            }
            #expect(closed == true)
            #expect(called.withLock { $0.sorted() } == ["first", "second"])
            _ = watch.watch(connection) { called.withLock { $0.append("late") } }
            let late = await eventually(within: .seconds(10), every: .milliseconds(50)) {
                called.withLock { $0.contains("late") } ? true : nil
            }
            #expect(late == true)
            await #expect(throws: ConnectionClosed.self) {
                try await connection.checkedQuery("SELECT 1", logger: Self.log)
            }
        }
        await store.close()
    }

    /// A transaction that waits, idle, until the server closes its connection, then queries.
    static func idle(_ store: PostgresStore) async throws {
        try await store.client.checkedTransaction(logger: log) { connection in
            try await connection.checkedQuery("SELECT 1", logger: log)
            // Idle in the transaction past the 1 s the server allows (a 3 s lease).
            let closed = await eventually(within: .seconds(30), every: .milliseconds(100)) {
                connection.isClosed ? true : nil
            }
            #expect(closed == true, "the server kept an idle transaction open")
            try await connection.checkedQuery("SELECT 2", logger: log)
        }
    }

    /// The `QueueError` `body` throws (nil if it throws none).
    static func error(_ body: () async throws -> Void) async -> QueueError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? QueueError
        }
    }

    /// Migrations run on a connection with their own limits (ten minutes), not a worker's (here 1 s,
    /// which a busy machine can stall its own client past between two of a migration's statements).
    @Test func migrationsRunWithTheirOwnTimeLimits() async throws {
        let store = try await Self.store()
        let probe = Schema.Migration(
            version: 1, description: "the limits in force",
            statements: [
                """
                CREATE TABLE limits AS SELECT name, setting FROM pg_settings
                WHERE name IN ('statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout')
                """
            ])
        let applied = try await Schema.migrate(
            store.link, applicationName: "reel", migrations: [probe], versionTable: "limits_version", lockKey: 7,
            limit: .seconds(600), logger: Self.log)
        #expect(applied == [1])
        let limits = try await store.perform("read the limits") {
            var found: [String: String] = [:]
            let rows = try await store.client.query("SELECT name, setting FROM limits")
            for try await (name, setting) in rows.decode((String, String).self) { found[name] = setting }
            return found
        }
        #expect(
            limits == [
                "statement_timeout": "600000", "lock_timeout": "600000",
                "idle_in_transaction_session_timeout": "600000",
            ])
        await store.close()
    }

    @Test func everyConnectionCarriesTheWorkersTimeLimitsToTheServer() async throws {
        let store = try await Self.store()
        let settings = try await store.perform("read the settings") {
            var found: [String: String] = [:]
            let rows = try await store.client.query(
                """
                SELECT name, setting FROM pg_settings WHERE name IN
                    ('statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout', 'application_name')
                """)
            for try await (name, setting) in rows.decode((String, String).self) { found[name] = setting }
            return found
        }
        // A 3 s lease: worker requests have a third of it.
        #expect(settings["statement_timeout"] == "1000", "\(settings)")
        #expect(settings["lock_timeout"] == "500", "\(settings)")
        #expect(settings["idle_in_transaction_session_timeout"] == "1000", "\(settings)")
        #expect(settings["application_name"] == "reel", "\(settings)")
        await store.close()
        // A limit of one's own, within a third of the lease.
        let url = store.url
        #expect(throws: QueueError.self) {
            try PostgresStore(
                url: url, options: PostgresStore.Options(lease: .seconds(30), workerTimeout: .seconds(11)))
        }
        let chosen = try PostgresStore(
            url: url, options: PostgresStore.Options(lease: .seconds(30), workerTimeout: .seconds(4)))
        let limit = try await chosen.perform("read the limit") {
            try await chosen.client.query("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'")
                .collect().first?.decode(String.self)
        }
        #expect(limit == "4000")
        await chosen.close()
    }

    @Test func aRequestTheStoreGaveUpOnNoLongerHoldsItsRowLockOnTheServer() async throws {
        let store = try await Self.store()
        let id = try await store.submit(Self.spec()).status.id
        let lease = try #require(try await store.claim(worker: "w"))
        // A renewal that stalls on the server once it has locked the row (a trigger sleeping a minute,
        // as a slow disk or a stuck extension would): the one that reports `finalizing` (the claim set
        // `transcoding`).
        try await Self.withConnection(to: store) { test in
            try await test.query(
                """
                CREATE FUNCTION stall() RETURNS trigger AS $$
                BEGIN IF NEW.phase = 'finalizing' THEN PERFORM pg_sleep(60); END IF; RETURN NEW; END
                $$ LANGUAGE plpgsql
                """, logger: Self.log)
            try await test.query(
                "CREATE TRIGGER stall BEFORE UPDATE ON reel_jobs FOR EACH ROW EXECUTE FUNCTION stall()",
                logger: Self.log)
            let stall = JobProgress(fraction: 0.5, phase: .finalizing, framesPerSecond: nil, secondsRemaining: nil)
            let began = ContinuousClock.now
            await #expect(throws: QueueError.self) { try await store.renew(lease, progress: stall) }
            #expect(ContinuousClock.now - began < .seconds(10), "the store did not give up at its time limit")
            // The server ended it too: the row can be locked again at once, well before the minute is up.
            let free = await eventually(within: .seconds(10), every: .milliseconds(100)) { () -> Bool? in
                (try? await test.query("SELECT id FROM reel_jobs WHERE id = \(id) FOR UPDATE NOWAIT", logger: Self.log)
                    .collect()) != nil
                    ? true : nil
            }
            #expect(free == true, "the abandoned renewal still holds the row")
            #expect(ContinuousClock.now - began < .seconds(30))
            try await test.query("DROP TRIGGER stall ON reel_jobs", logger: Self.log)
        }
        #expect(try await store.renew(lease, progress: nil) == .held)
        await store.close()
    }

    @Test func aFinishTheStoreGaveUpOnIsNotAppliedLater() async throws {
        let store = try await Self.store()
        let id = try await store.submit(Self.spec()).status.id
        let lease = try #require(try await store.claim(worker: "w"))
        // Someone holds the job's row (a long transaction elsewhere) while the worker records its outcome.
        try await Self.withConnection(to: store) { holder in
            try await holder.query("BEGIN", logger: Self.log)
            try await holder.query("SELECT id FROM reel_jobs WHERE id = \(id) FOR UPDATE", logger: Self.log)
            do {
                _ = try await store.finish(lease, .completed(JobStoreFixtures.result))
                Issue.record("recorded an outcome through a row locked elsewhere")
            } catch let error as QueueError {
                #expect(error.kind == .unavailable, "\(error)")
            }
            // The server gave up waiting for the lock too, so when the row is free again the finish the
            // worker was told had failed does not happen behind its back.
            try await Task.sleep(for: .seconds(2))
            try await holder.query("COMMIT", logger: Self.log)
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await store.status(id)?.state == .exporting)
        #expect(try await store.finish(lease, .completed(JobStoreFixtures.result)))
        #expect(try await store.status(id)?.state == .completed)
        await store.close()
    }

    @Test func aRunningJobsStatusFileKeepsItsHeartbeatWithoutProgress() async throws {
        let store = try await Self.store(lease: .seconds(30))
        let id = try await store.submit(Self.spec()).status.id
        let lease = try #require(try await store.claim(worker: "w"))
        let path = try #require(store.statusFile(for: id))
        func file() throws -> JobStatus {
            try JSONCoding.decoder.decode(JobStatus.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        }
        // A job in a long flush: renewals every second, no progress, for 9 s. After each, the file a
        // poller reads is never more than 5 s behind the database's heartbeat.
        // (That holds however late the renewals come; and the file is not rewritten at every renewal.)
        var writes = [try #require(try file().heartbeatAt)]
        for _ in 0..<9 {
            try await Task.sleep(for: store.renewInterval)
            #expect(try await store.renew(lease, progress: nil) == .held)
            let database = try #require(try await store.status(id)?.heartbeatAt)
            let written = try #require(try file().heartbeatAt)
            #expect(database.timeIntervalSince(written) <= 5, "the status file's heartbeat is stale")
            if let last = writes.last, written > last { writes.append(written) }
        }
        #expect(writes.count >= 2, "never rewritten in 9 s without progress")
        for (earlier, later) in zip(writes, writes.dropFirst()) {
            #expect(later.timeIntervalSince(earlier) >= 3.5, "rewritten \(later.timeIntervalSince(earlier)) s apart")
        }
        #expect(try file().state == .exporting && file().progress == 0)
        await store.close()
    }

    @Test func aRefusedConnectionFailsAtOnceAndSaysSo() async throws {
        // Nothing listens on port 1: each connection is refused at once. The request may wait 30 s.
        let store = try PostgresStore(
            url: try DatabaseURL("postgres://reel@127.0.0.1:1/nothing?sslmode=disable"),
            options: PostgresStore.Options(requestTimeout: .seconds(30)))
        for attempt in 0..<2 {
            let began = ContinuousClock.now
            do {
                _ = try await store.list(state: nil)
                Issue.record("listed jobs of a database that is not there")
            } catch let error as QueueError {
                #expect(error.kind == .unavailable, "\(error)")
                #expect(error.message.contains("refused the connection") && error.message.contains("127.0.0.1:1"))
            }
            // Documented: within 2 s (here generous, for a loaded machine), not the 30 s limit; the
            // second request, with the refusal known, at once.
            #expect(ContinuousClock.now - began < .seconds(attempt == 0 ? 5 : 2), "attempt \(attempt)")
        }
        await store.close()
    }

    @Test func aLoginTheServerRefusesFailsAtOnceWithTheServersReason() async throws {
        let server = try await PostgresServer.shared()
        let store = try PostgresStore(
            url: try DatabaseURL(server.url("reel_no_such_database")),
            options: PostgresStore.Options(requestTimeout: .seconds(30)))
        let began = ContinuousClock.now
        do {
            _ = try await store.list(state: nil)
            Issue.record("listed jobs of a database that does not exist")
        } catch let error as QueueError {
            #expect(error.kind == .unavailable)
            #expect(error.message.contains("refused the connection"), "\(error)")
            #expect(error.message.contains("reel_no_such_database\" does not exist"), "\(error)")
        }
        #expect(ContinuousClock.now - began < .seconds(5))
        await store.close()
    }

    @Test func aDatabaseThatComesBackIsFoundWithinAboutASecond() async throws {
        let server = try await PostgresServer.start(label: "comeback")
        defer { server.destroy() }
        let store = try await Self.store(on: server)
        _ = try await store.submit(Self.spec())
        try await server.stopServer()
        // Requests during a 15 s outage: each refused, and the pool behind them backing off.
        let outage = ContinuousClock.now
        var refusals = 0
        while ContinuousClock.now - outage < .seconds(15) {
            do {
                _ = try await store.list(state: nil)
            } catch let error as QueueError where error.message.contains("refused") {
                refusals += 1
            }
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(refusals >= 10)
        try await server.startServer()
        let back = ContinuousClock.now
        // The store's probe finds it within half a second; the first request after that uses a new pool.
        let listed = await eventually(within: .seconds(30), every: .milliseconds(100)) {
            try? await store.list(state: nil)
        }
        #expect(listed?.count == 1)
        #expect(ContinuousClock.now - back < .seconds(5), "found again after \(ContinuousClock.now - back)")
        await store.close()
    }
}
