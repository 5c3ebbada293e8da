import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

@testable import ReelFleet

/// What only the PostgreSQL store does: its schema, notifications, status files and errors.
@Suite("PostgreSQL store", .tags(.media, .postgres), .timeLimit(.minutes(4)))
struct PostgresStoreTests {
    static func spec() async throws -> JobSpec {
        JobSpec(
            asset: try await Fixtures.url(Fixtures.landscape).path, preset: "LowQuality", outputType: .mp4,
            output: Fixtures.folder.appendingPathComponent("never-{id}.mp4").path)
    }

    /// Generous time limits: these tests check behaviour, and share a loaded machine with the export tests.
    static func store(_ url: String, _ options: PostgresStore.Options = .init(requestTimeout: .seconds(120)))
        throws -> PostgresStore
    {
        try PostgresStore(url: try DatabaseURL(url), options: options)
    }

    @Test func migrationsAreVersionedIdempotentAndSafeToRunAtOnce() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        let stores = try (0..<3).map { _ in try Self.store(url) }
        #expect(try await stores[0].schemaVersion().current == 0)
        // A store on a database without the tables says what to do.
        do {
            _ = try await stores[0].submit(try await Self.spec())
            Issue.record("submitted into a database without tables")
        } catch let error as QueueError {
            #expect(error.kind == .unavailable && error.message.contains("reel db migrate"), "\(error)")
        }
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for store in stores { group.addTask { try await store.migrate() } }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(applied.sorted() == [1, 2, 3], "each migration applied exactly once")
        #expect(try await stores[1].migrate() == [])
        let version = try await stores[2].schemaVersion()
        #expect(version.current == 3 && version.latest == 3)
        #expect(try await server.psql(url.databaseName, "SELECT count(*) FROM reel_schema_version") == "3")
        for store in stores { await store.close() }
    }

    @Test func statusFilesFollowTheSchemaThroughEveryChange() async throws {
        let store = try await PostgresHarness().makeStore() as! PostgresStore
        let id = try await store.submit(try await Self.spec()).status.id
        let path = try #require(store.statusFile(for: id))
        func file() throws -> [String: Any] {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        var json = try file()
        for field in [
            "schema", "id", "state", "progress", "asset", "preset", "outputType", "output", "attempts", "createdAt",
            "updatedAt", "error",
        ] {
            #expect(json.keys.contains(field), "missing \(field)")
        }
        #expect(json["schema"] as? Int == 1 && json["state"] as? String == "waiting" && json["error"] is NSNull)
        let lease = try #require(try await store.claim(worker: "host:1"))
        #expect(try file()["state"] as? String == "exporting")
        let report = JobProgress(fraction: 0.25, phase: .transcoding, framesPerSecond: 30, secondsRemaining: 2)
        #expect(try await store.renew(lease, progress: report) == .held)
        #expect(try file()["progress"] as? Double == 0.25)
        #expect(try await store.finish(lease, .completed(JobStoreFixtures.result)))
        json = try file()
        #expect(json["state"] as? String == "completed" && json["worker"] is NSNull)
        #expect((json["result"] as? [String: Any])?["bytes"] as? Int == 1234)
        // The file and the database agree.
        let stored = try #require(try await store.status(id))
        #expect(stored.state == .completed && stored.attempts == json["attempts"] as? Int && stored.progress == 1)
        await store.close()
    }

    @Test func aSubmitWakesAnIdleWorkerAndACancelWakesARunningOne() async throws {
        // Renewals 5 minutes apart: only a notification can end these waits early, and the listener
        // counts what it delivered.
        let harness = PostgresHarness(
            options: PostgresStore.Options(lease: .seconds(900), renew: .seconds(300), requestTimeout: .seconds(120)))
        let worker = try await harness.makeStore() as! PostgresStore
        let client = try await harness.reopen(worker)
        _ = try await worker.claim(worker: "w")  // starts the listener
        #expect(await eventually(within: .seconds(30)) { worker.notifications.isConnected ? true : nil } == true)
        let before = worker.notifications.delivered
        async let woken: Void = worker.waitForWork(timeout: .seconds(600))
        try await Task.sleep(for: .milliseconds(200))
        let id = try await client.submit(try await Self.spec()).status.id
        await woken
        #expect(worker.notifications.delivered.work > before.work, "woken by the timeout, not the notification")

        let lease = try #require(try await worker.claim(worker: "w"))
        #expect(lease.id == id)
        let heard = worker.notifications.delivered
        async let news: Void = worker.waitToRenew(lease)
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await client.cancel(id) == .requested)
        await news
        #expect(worker.notifications.delivered.news > heard.news, "the cancel waited for the renewal")
        #expect(try await worker.renew(lease, progress: nil) == .cancelRequested)
        #expect(try await worker.finish(lease, .cancelled))
        await worker.close()
    }

    @Test func anUnreachableDatabaseIsAnErrorNamingItWithinTheTimeLimit() async throws {
        // Nothing listens on port 1.
        let store = try Self.store(
            "postgres://reel@127.0.0.1:1/nothing?sslmode=disable", PostgresStore.Options(requestTimeout: .seconds(3)))
        do {
            _ = try await store.list(state: nil)
            Issue.record("listed jobs of a database that is not there")
        } catch let error as QueueError {
            #expect(error.kind == .unavailable && error.message.contains("127.0.0.1:1"), "\(error)")
        }
        await store.close()
    }

    @Test func urlsReadLikeLibpqs() throws {
        let url = try DatabaseURL("postgres://alice:s%40cret@db.example:6543/jobs?sslmode=require", environment: [:])
        #expect(url.user == "alice" && url.password == "s@cret" && url.host == "db.example" && url.port == 6543)
        #expect(url.database == "jobs" && url.sslMode == "require")
        #expect(url.description == "postgres://alice@db.example:6543/jobs")
        let socket = try DatabaseURL("postgresql:///reel?host=/run/postgresql", environment: ["USER": "bob"])
        #expect(socket.host == nil && socket.socketFolder == "/run/postgresql" && socket.user == "bob")
        #expect(throws: QueueError.self) { try DatabaseURL("mysql://x/y") }
        #expect(throws: QueueError.self) { try DatabaseURL("postgres://x/y?sslmode=sometimes") }
    }
}

enum JobStoreFixtures {
    static let result = JobResult(
        bytes: 1234, durationSeconds: 1, width: 224, height: 128, videoCodec: "h264", audioCodec: "aac",
        networkOptimized: true, elapsedSeconds: 0.5)
}

extension String {
    /// The database a URL names.
    var databaseName: String { URLComponents(string: self)?.path.split(separator: "/").last.map(String.init) ?? "" }
}
