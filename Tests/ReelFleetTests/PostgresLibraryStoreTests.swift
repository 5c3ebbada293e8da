import Foundation
import LibraryContract
import ReelLibrary
import ReelLibraryFleet
import TestSupport
import Testing

@testable import ReelFleet

/// PostgreSQL as a `LibraryStoreHarness`: a fresh database per store on the tests' private server,
/// the queue's tables and the library's side by side, as `reel db migrate` leaves them.
struct PostgresLibraryHarness: LibraryStoreHarness {
    /// The queue stores under the library stores it made, for `OpenedStores.closing`.
    let opened = OpenedStores()

    func makeStore() async throws -> any LibraryStore {
        try await PostgresLibraryHarness.make(opened: opened).library
    }

    static func make(opened: OpenedStores? = nil) async throws -> (
        database: PostgresStore, library: PostgresLibraryStore
    ) {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        let database = try PostgresStore(
            url: try DatabaseURL(url), options: PostgresStore.Options(connections: 4, requestTimeout: .seconds(120)))
        opened?.add(database)
        #expect(try await database.migrate() == [1, 2, 3])
        let library = PostgresLibraryStore(database: database)
        #expect(try await library.migrate() == [1, 2])
        return (database, library)
    }
}

/// The library store's contract (Tests/LibraryContract), unchanged, against PostgreSQL; then what
/// only a shared database adds: migrations run from several machines at once, and writers on several
/// machines at once against a reader syncing by change token.
@Suite("Library store: PostgreSQL", .tags(.postgres), .timeLimit(.minutes(10)))
struct PostgresLibraryStoreTests {
    @Test("the library store contract", arguments: LibraryStoreContract.cases)
    func contract(_ contractCase: LibraryStoreContract.Case) async throws {
        let harness = PostgresLibraryHarness()
        try await harness.opened.closing { try await contractCase.run(harness) }
    }

    @Test("the library's migrations sit beside the queue's, run once however many machines run them at once")
    func migrations() async throws {
        let server = try await PostgresServer.shared()
        let url = try await server.makeDatabase()
        let stores = try (0..<4).map { _ in try PostgresStore(url: try DatabaseURL(url)) }
        let applied = try await withThrowingTaskGroup(of: [Int].self) { group in
            for store in stores { group.addTask { try await PostgresLibraryStore(database: store).migrate() } }
            return try await group.reduce(into: [[Int]]()) { $0.append($1) }
        }
        // Each migration once, by whichever machine took its turn first.
        #expect(applied.flatMap { $0 }.sorted() == [1, 2], "\(applied)")
        // The queue's schema is its own: still unmigrated, then migrated without touching the library's.
        #expect(try await stores[0].schemaVersion().current == 0)
        #expect(try await stores[0].migrate() == [1, 2, 3])
        let library = PostgresLibraryStore(database: stores[0])
        let version = try await library.schemaVersion()
        #expect(version.current == 2 && version.latest == 2)
        #expect(try await library.migrate().isEmpty)
        let database = URL(string: url)!.lastPathComponent
        #expect(try await server.psql(database, "SELECT count(*) FROM reel_library_schema_version") == "2")
        #expect(try await server.psql(database, "SELECT count(*) FROM reel_schema_version") == "3")
        let identity = try await server.psql(database, "SELECT count(*) FROM reel_library_state")
        #expect(identity == "1", "one library identity, not one per migrator")
        for store in stores { await store.close() }
    }

    @Test("the asset table is AssetColumns': each column's name, in order, its type and whether it takes NULL")
    func schemaIsTheColumnTable() async throws {
        let harness = PostgresLibraryHarness()
        try await harness.opened.closing {
            let (database, _) = try await PostgresLibraryHarness.make(opened: harness.opened)
            let name = database.url.database
            let rows = try await PostgresServer.shared().psql(
                name,
                """
                SELECT column_name, data_type, is_nullable FROM information_schema.columns
                WHERE table_name = 'reel_library_asset' ORDER BY ordinal_position
                """
            ).split(separator: "\n").map(String.init)
            let expected = AssetColumns.all.map { column in
                let type =
                    switch column.type.storage {
                    case .integer: "bigint"
                    case .real: "double precision"
                    case .text: "text"
                    }
                return "\(column.name)|\(type)|\(column.isNullable ? "YES" : "NO")"
            }
            #expect(rows == expected)
        }
    }

    @Test("concurrent writers: change numbers in commit order without gaps; a reader syncing meanwhile misses nothing")
    func concurrentWriters() async throws {
        let (database, store) = try await PostgresLibraryHarness.make()
        let writers = 4
        let batches = 25
        let start = try await store.currentChangeToken()
        let writing = Task {
            try await withThrowingTaskGroup(of: [String].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var ids: [String] = []
                        for batch in 0..<batches {
                            let seed = 1000 + writer * batches + batch
                            let asset = LibraryStoreContract.asset(
                                seed, path: "/w\(writer)/IMG_\(batch).HEIC",
                                // Identifiers come from the hash's first 128 bits: the seed goes there.
                                hash: String(format: "%032x", seed) + String(repeating: "0", count: 32))
                            ids.append(try await store.apply([.insertAsset(asset)])[0]!)
                        }
                        return ids
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
        }
        // A client syncing while the writers run: every token it is handed must cover all it will
        // ever be told about before that point, or an insertion is lost to it for good.
        var seen: [String] = []
        var token = start
        let total = Int64(writers * batches)
        // (Bounded, so that a writer's failure ends the test with its error rather than at the time limit.)
        let deadline = ContinuousClock.now + .seconds(120)
        while token.sequence - start.sequence < total, ContinuousClock.now < deadline {
            let changes = try await store.changes(since: token)
            seen += changes.insertedLocalIdentifiers
            #expect(changes.token.sequence >= token.sequence, "tokens never go back")
            token = changes.token
            try await Task.sleep(for: .milliseconds(5))
        }
        let all = try await writing.value
        // The writers are done; a reader the deadline above stopped early (a loaded machine's writers
        // can take longer) catches up now. A read that moves the token no further while changes are
        // missing ends it: the checks below then say what was lost.
        while token.sequence - start.sequence < total {
            let changes = try await store.changes(since: token)
            seen += changes.insertedLocalIdentifiers
            guard changes.token.sequence > token.sequence else { break }
            token = changes.token
        }
        let last = try await store.changes(since: token)
        #expect(last.insertedLocalIdentifiers.isEmpty, "nothing committed below a token already handed out")
        #expect(Set(seen) == Set(all) && seen.count == all.count, "each insertion reported once")
        #expect(
            try await store.currentChangeToken().sequence == start.sequence + total,
            "one change number per batch, no gaps")
        await database.close()
    }

    @Test("scans and saves take turns across machines: while one holds the library, another is refused as busy")
    func scanLock() async throws {
        let (database, store) = try await PostgresLibraryHarness.make()
        let elsewhere = try PostgresStore(url: database.url)
        let other = PostgresLibraryStore(database: elsewhere)
        let refusal = try await store.exclusively(waitingUpTo: .zero) { () async throws -> LibraryError? in
            do {
                try await other.exclusively(waitingUpTo: .milliseconds(600)) {}
                return nil
            } catch let error as LibraryError {
                return error
            }
        }
        #expect(refusal?.code == .busy, "\(String(describing: refusal))")
        // Released when the holder is done: the other machine gets it at once.
        #expect(try await other.exclusively(waitingUpTo: .zero) { 42 } == 42)
        await elsewhere.close()
        await database.close()
    }
}
