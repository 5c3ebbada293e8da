import Foundation
import ReelQueue
import TestSupport
import Testing

@testable import ReelFleet

/// No connection the store makes is left open, whatever moment a cancellation or a `close()` comes
/// at. postgres-nio asserts in `PostgresConnection.deinit` that a connection it releases was closed
/// (in a debug build a dropped open connection crashes the test process; in a release build it
/// would keep its socket and its server session for good), so each case both runs through the
/// windows where a connection could be dropped (cancelled before, during and after its handshake,
/// and while its first query runs; a pool shut down with requests and connects in flight) and then
/// asks the server whether any session of the store's is still there.
@Suite("PostgreSQL connections: none left open", .tags(.postgres), .serialized, .timeLimit(.minutes(10)))
struct PostgresConnectionLeakTests {
    /// A store on a fresh database whose sessions carry an application name of their own.
    static func store(_ url: String, name: String) throws -> PostgresStore {
        try PostgresStore(
            url: try DatabaseURL(url),
            options: PostgresStore.Options(requestTimeout: .seconds(60), applicationName: name))
    }

    /// The server's sessions named `name`, once they have all gone (nil if some are still there after 30 s:
    /// the server ends a session as soon as its client's socket closes).
    static func sessionsGone(_ server: PostgresServer, _ url: String, name: String) async throws -> Bool {
        let left = try await eventually(within: .seconds(30), every: .milliseconds(200)) { () -> String? in
            let count = try await server.psql(
                url.databaseName, "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(name)'")
            return count == "0" ? count : nil
        }
        return left != nil
    }

    @Test func connectionsCancelledAtAnyMomentAreClosedNotDropped() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        let name = "reel-leak-cancel"
        let store = try Self.store(url, name: name)
        var random = SeededGenerator(seed: 0x5EED_CA9C)
        var answered = 0
        for round in 0..<60 {
            // A connection of the link's own (the probe's, the listener's, a migration's), and a probe,
            // cancelled after 0-40 ms: before the TCP connect, in the handshake, or in its work (which
            // then throws, as the listener's does when it is cancelled).
            let delay = Duration.microseconds(Int.random(in: 0..<40_000, using: &random))
            let own = Task {
                try await store.link.withOwnConnection { connection in
                    try await connection.checkedQuery("SELECT 1", logger: store.logger)
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            let probe = Task { await store.link.probe(reuseWithin: .zero) }
            if round % 3 != 0 { try await Task.sleep(for: delay) }
            own.cancel()
            probe.cancel()
            if (try? await own.value) != nil { answered += 1 }
            _ = await probe.value
        }
        // (Not every connection may be cancelled in time: then it ran its query and closed.)
        #expect(answered < 60, "no connection was cancelled before it answered (seed \(random.seed))")
        await store.close()
        #expect(try await Self.sessionsGone(server, url, name: name), "sessions left open (seed \(random.seed))")
    }

    @Test func storesClosedWithRequestsInFlightLeaveNoSession() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        let name = "reel-leak-close"
        let migrator = try Self.store(url, name: "reel-leak-migrate")
        _ = try await migrator.migrate()
        await migrator.close()
        var random = SeededGenerator(seed: 0xC105_ED)
        var failed = 0
        for _ in 0..<25 {
            // The pool connects for four requests at once while the store closes under them, 0-30 ms in.
            let store = try Self.store(url, name: name)
            let requests = (0..<4).map { _ in Task { try await store.list(state: nil) } }
            try await Task.sleep(for: .microseconds(Int.random(in: 0..<30_000, using: &random)))
            await store.close()
            for request in requests {
                if (try? await request.value) == nil { failed += 1 }
            }
        }
        #expect(failed > 0, "no store closed before its requests were answered (seed \(random.seed))")
        #expect(try await Self.sessionsGone(server, url, name: name), "sessions left open (seed \(random.seed))")
    }
}
