import Foundation
import LibraryContract
import TestSupport
import Testing

@testable import ReelLibrary

struct SQLiteHarness: LibraryStoreHarness {
    func makeStore() async throws -> any LibraryStore {
        try SQLiteLibraryStore(
            path: Fixtures.scratchFolder("library-store").appendingPathComponent("library.sqlite").path)
    }
}

@Suite("SQLite library store", .tags(.process), .timeLimit(.minutes(10)))
struct SQLiteContractTests {
    @Test("the library store contract", arguments: LibraryStoreContract.cases)
    func contract(_ contractCase: LibraryStoreContract.Case) async throws {
        try await contractCase.run(SQLiteHarness())
    }

    @Test("the database is in WAL mode, its migrations recorded, and it reopens with its data")
    func walAndMigrations() async throws {
        let path = Fixtures.scratchFolder("library-wal").appendingPathComponent("library.sqlite").path
        let store = try SQLiteLibraryStore(path: path)
        let status = try store.migrationStatus()
        #expect(status.applied == status.known && !status.known.isEmpty)
        let id = try await store.apply([.insertAsset(LibraryStoreContract.asset(1))])[0]
        let mode = try await Tools.run("sqlite3", [path, "PRAGMA journal_mode;"])
        #expect(mode.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "wal")
        let reopened = try SQLiteLibraryStore(path: path)
        #expect(try await reopened.assets(localIdentifiers: [id!]).count == 1)
        #expect(try await reopened.libraryIdentifier() == (try await store.libraryIdentifier()))
    }

    @Test("commits are durable (synchronous FULL, not WAL's NORMAL); statistics are refreshed on request")
    func durableAndAnalysed() async throws {
        let path = Fixtures.scratchFolder("library-full").appendingPathComponent("library.sqlite").path
        let store = try SQLiteLibraryStore(path: path)
        #expect(try await store.synchronousSetting() == 2, "PRAGMA synchronous is FULL (2) on the writer")
        _ = try await store.apply((1...20).map { .insertAsset(LibraryStoreContract.asset($0)) })
        let before = try await Tools.run(
            "sqlite3", [path, "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1';"])
        #expect(before.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        try await store.refreshStatistics()
        let after = try await Tools.run("sqlite3", [path, "SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'asset';"])
        #expect((Int(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "\(after.stdout)")
    }

    @Test("the asset table is AssetColumns': each column's name, in order, its type and whether it takes NULL")
    func schemaIsTheColumnTable() async throws {
        let path = Fixtures.scratchFolder("library-columns").appendingPathComponent("library.sqlite").path
        _ = try SQLiteLibraryStore(path: path)
        let info = try await Tools.run(
            "sqlite3", [path, "SELECT name, type, \"notnull\" OR pk FROM pragma_table_info('asset') ORDER BY cid;"])
        let rows = info.stdout.split(separator: "\n").map(String.init)
        let expected = AssetColumns.all.map { column in
            let type =
                switch column.type.storage {
                case .integer: "INTEGER"
                case .real: "REAL"
                case .text: "TEXT"
                }
            return "\(column.name)|\(type)|\(column.isNullable ? 0 : 1)"
        }
        #expect(rows == expected)
    }
}
