import Foundation
import Logging
import PostgresNIO
import ReelFleet
import ReelLibrary

/// The photo library in the fleet's PostgreSQL database, beside the queue: its own tables
/// (`reel_library_…`, created by `LibraryMigrations`, which `reel db migrate` applies) reached through
/// the queue store's connection pool and time limits, so every worker of a fleet resolves
/// `library:<id>` inputs and saves outputs back into one library. It passes the same contract as
/// the embedded SQLite store (`Tests/LibraryContract`); fetches are the same statement
/// (`AssetSelect`) in PostgreSQL's dialect, every value a bound parameter.
///
/// Change tokens. Every `apply` transaction first increments the one change number
/// (`UPDATE reel_library_state SET sequence = sequence + 1 RETURNING sequence`) and stamps its rows
/// with it. The row lock that update takes is held until commit, so concurrent writers take turns:
/// numbers are handed out in commit order, and a batch that rolls back gives its number back. A
/// reader (`changes(since:)`) reads the number and the rows in one snapshot (`REPEATABLE READ`), so
/// the token it returns covers exactly what it reported. A sequence (`nextval`) would not do: it is
/// outside transactions, so a writer that took 5 can commit after one that took 6; a client that
/// synced at 6 in between would never see the changes stamped 5 (and a rolled-back batch would
/// leave a gap). Writers to one library wait for each other, a few milliseconds per batch; the SQLite
/// store serialises its writers the same way.
public final class PostgresLibraryStore: LibraryStore {
    /// The queue's store whose pool, time limits and error reporting the library uses.
    public let database: PostgresStore

    /// A library in `database` (its tables must exist: `migrate()`). The store runs no pool of its
    /// own: `database` must be running (its `.standalone` lifecycle, or its host's service group).
    public init(database: PostgresStore) {
        self.database = database
    }

    /// Applies the library's migrations the database lacks (see `LibraryMigrations`); returns their versions.
    public func migrate() async throws -> [Int] {
        let database = database
        return try await run("migrate the library's schema", within: .seconds(600)) { _, logger in
            try await Schema.migrate(
                database.link, applicationName: database.options.applicationName,
                migrations: LibraryMigrations.migrations, versionTable: LibraryMigrations.versionTable,
                lockKey: LibraryMigrations.lockKey, limit: .seconds(600), logger: logger)
        }
    }

    /// The library schema's version in the database, and the newest this build knows.
    public func schemaVersion() async throws -> (current: Int, latest: Int) {
        let current = try await run("read the library's schema version") { client, logger in
            try await Schema.version(client, versionTable: LibraryMigrations.versionTable, logger: logger)
        }
        return (current, LibraryMigrations.latest)
    }

    // MARK: - Running requests

    /// Runs `body` as one request of the queue store (its time limit, its reconnection), turning a
    /// `LibraryError` thrown inside (also from a transaction, rolled back) into itself and any other
    /// failure into `.storeFailed` with the store's one-line reason.
    func run<T: Sendable>(
        _ what: String, within limit: Duration? = nil,
        _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> T
    ) async throws(LibraryError) -> T {
        let database = database
        let outcome: Result<T, LibraryError>
        do {
            outcome = try await database.perform(what, within: limit) { () async throws -> Result<T, LibraryError> in
                do {
                    return .success(try await body(database.client, database.logger))
                } catch let error as LibraryError {
                    return .failure(error)
                }
            }
        } catch {
            throw LibraryError(.storeFailed, "the library: \(error.message)")
        }
        return try outcome.get()
    }

    /// Runs a read on one connection of the pool.
    func read<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws(LibraryError) -> T {
        try await run(what) { client, logger in
            try await client.withConnection { connection in try await body(connection, logger) }
        }
    }

    public func libraryIdentifier() async throws -> String {
        try await read("read the library's identity") { connection, logger in
            try await Self.token(connection, logger).library
        }
    }

    static func token(_ connection: PostgresConnection, _ logger: Logger) async throws -> LibraryChangeToken {
        let rows = try await connection.rows("SELECT identifier, sequence FROM reel_library_state", logger)
        guard let row = rows.first else {
            throw LibraryError(.storeFailed, "the library's state row is missing; run `reel db migrate`")
        }
        return LibraryChangeToken(
            library: try row["identifier"].decode(String.self), sequence: try row["sequence"].decode(Int64.self))
    }

    // MARK: Files

    public func fileStamps(inFolder folder: String) async throws -> [String: FileStamp] {
        try await read("read the library's files") { connection, logger in
            var stamps: [String: FileStamp] = [:]
            for row in try await connection.rows(
                "SELECT name, size, modified_ns FROM reel_library_file WHERE folder = \(folder)", logger)
            {
                stamps[try row["name"].decode(String.self)] = FileStamp(
                    size: try row["size"].decode(Int64.self),
                    modifiedNanoseconds: try row["modified_ns"].decode(Int64.self))
            }
            return stamps
        }
    }

    public func folders(under root: String) async throws -> [String] {
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return try await read("read the library's folders") { connection, logger in
            try await connection.rows(
                """
                SELECT DISTINCT folder FROM reel_library_file WHERE folder = \(root) OR starts_with(folder, \(prefix))
                UNION SELECT DISTINCT folder FROM reel_library_skipped_file
                WHERE folder = \(root) OR starts_with(folder, \(prefix))
                """, logger
            ).map { try $0["folder"].decode(String.self) }
        }
    }

    static let fileColumns = "path, size, modified_ns, content_hash, facts"

    static func fileRecord(_ row: PostgresRandomAccessRow) throws -> FileRecord {
        let facts = try JSONDecoder().decode(FileFacts.self, from: Data(try row["facts"].decode(String.self).utf8))
        return FileRecord(
            path: try row["path"].decode(String.self),
            stamp: FileStamp(
                size: try row["size"].decode(Int64.self), modifiedNanoseconds: try row["modified_ns"].decode(Int64.self)
            ),
            contentHash: try row["content_hash"].decode(String.self), facts: facts)
    }

    func files(_ what: String, _ query: PostgresQuery) async throws -> [FileRecord] {
        try await read(what) { connection, logger in
            try await connection.rows(query, logger).map(PostgresLibraryStore.fileRecord)
        }
    }

    public func files(atPaths paths: [String]) async throws -> [FileRecord] {
        guard !paths.isEmpty else { return [] }
        return try await files(
            "read the library's files",
            "SELECT \(unescaped: Self.fileColumns) FROM reel_library_file WHERE path = ANY(\(paths))")
    }

    public func files(contentHash hash: String, limit: Int) async throws -> [FileRecord] {
        try await files(
            "read the library's files",
            """
            SELECT \(unescaped: Self.fileColumns) FROM reel_library_file WHERE content_hash = \(hash)
            ORDER BY path LIMIT \(limit)
            """)
    }

    public func files(contentIdentifier identifier: String, limit: Int) async throws -> [FileRecord] {
        try await files(
            "read the library's files",
            """
            SELECT \(unescaped: Self.fileColumns) FROM reel_library_file
            WHERE lower(content_identifier) = lower(\(identifier)) ORDER BY path LIMIT \(limit)
            """)
    }

    public func files(inFolder folder: String) async throws -> [FileRecord] {
        try await files(
            "read the library's files",
            "SELECT \(unescaped: Self.fileColumns) FROM reel_library_file WHERE folder = \(folder) ORDER BY name")
    }

    public func skippedFiles(under root: String) async throws -> [SkippedFile] {
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return try await read("read the library's skipped files") { connection, logger in
            try await connection.rows(
                """
                SELECT path, reason, size, modified_ns FROM reel_library_skipped_file
                WHERE folder = \(root) OR starts_with(folder, \(prefix)) ORDER BY path
                """, logger
            ).map { row in
                let size = try row["size"].decode(Int64?.self)
                let modified = try row["modified_ns"].decode(Int64?.self)
                let stamp = size.flatMap { size in modified.map { FileStamp(size: size, modifiedNanoseconds: $0) } }
                return SkippedFile(
                    path: try row["path"].decode(String.self), reason: try row["reason"].decode(String.self),
                    stamp: stamp)
            }
        }
    }

    // MARK: Assets

    static let assetColumns = "a.*, \(AssetSelect.representsBurst(.postgres))"

    /// One connection: the asset's row, then its files' records.
    public func assetWithFiles(_ localIdentifier: String) async throws -> (StoredAsset, [FileRecord])? {
        try await read("read an asset and its files") { connection, logger in
            let rows = try await connection.rows(
                """
                SELECT \(unescaped: Self.assetColumns) FROM reel_library_asset a
                WHERE a.local_identifier = \(localIdentifier)
                """, logger)
            guard let stored = try rows.first.map(PostgresLibraryStore.storedAsset) else { return nil }
            let paths = [stored.asset.path] + (stored.pairedVideoPath.map { [$0] } ?? []) + stored.editPaths
            let files = try await connection.rows(
                "SELECT \(unescaped: Self.fileColumns) FROM reel_library_file WHERE path = ANY(\(paths))", logger
            ).map(PostgresLibraryStore.fileRecord)
            return (stored, files)
        }
    }

    func assets(_ what: String, _ query: PostgresQuery) async throws -> [StoredAsset] {
        try await read(what) { connection, logger in
            try await connection.rows(query, logger).map(PostgresLibraryStore.storedAsset)
        }
    }

    public func assets(localIdentifiers: [String]) async throws -> [StoredAsset] {
        guard !localIdentifiers.isEmpty else { return [] }
        return try await fetchAssets(
            AssetQuery(scope: .identifiers(localIdentifiers), includeHiddenAssets: true, includeAllBurstAssets: true))
    }

    public func asset(containingPath path: String) async throws -> StoredAsset? {
        try await assets(
            "read the library's assets",
            """
            SELECT \(unescaped: Self.assetColumns) FROM reel_library_asset a
            WHERE a.path = \(path) OR a.paired_video_path = \(path)
            """
        ).first
    }

    public func assets(contentIdentifier identifier: String, mediaType: MediaType, unpaired: Bool, limit: Int)
        async throws -> [StoredAsset]
    {
        let filter = unpaired ? "AND a.paired_video_path IS NULL AND a.pairing IS NULL" : ""
        return try await assets(
            "read the library's assets",
            """
            SELECT \(unescaped: Self.assetColumns) FROM reel_library_asset a
            WHERE lower(a.content_identifier) = lower(\(identifier)) AND a.media_type = \(mediaType.rawValue)
            \(unescaped: filter) ORDER BY a.path LIMIT \(limit)
            """)
    }

    public func assets(inFolder folder: String, stem: String, limit: Int) async throws -> [StoredAsset] {
        try await assets(
            "read the library's assets",
            """
            SELECT \(unescaped: Self.assetColumns) FROM reel_library_asset a
            WHERE a.folder = \(folder) AND a.stem = \(stem) ORDER BY a.path LIMIT \(limit)
            """)
    }

    public func unownedFiles(limit: Int) async throws -> [FileRecord] {
        try await files(
            "read the library's files",
            """
            SELECT \(unescaped: Self.fileColumns) FROM reel_library_file f
            WHERE NOT EXISTS (SELECT 1 FROM reel_library_asset a WHERE a.path = f.path)
            AND NOT EXISTS (SELECT 1 FROM reel_library_asset a WHERE a.paired_video_path = f.path)
            AND NOT EXISTS (SELECT 1 FROM reel_library_asset a WHERE a.full_size_photo_path = f.path)
            AND NOT EXISTS (SELECT 1 FROM reel_library_asset a WHERE a.adjustment_data_path = f.path)
            AND NOT EXISTS (SELECT 1 FROM reel_library_asset a WHERE a.full_size_paired_video_path = f.path)
            ORDER BY f.path LIMIT \(limit)
            """)
    }

    public func fetchAssets(_ query: AssetQuery) async throws -> [StoredAsset] {
        let statement = try Self.postgresQuery(try AssetSelect.statement(query, count: false, dialect: .postgres))
        return try await assets("fetch assets", statement)
    }

    public func assetFolders() async throws -> [FolderCount] {
        try await read("read the library's folders") { connection, logger in
            try await connection.rows(
                "SELECT folder, count(*) AS n FROM reel_library_asset GROUP BY folder ORDER BY folder", logger
            ).map { FolderCount(folder: try $0["folder"].decode(String.self), count: try $0["n"].decode(Int.self)) }
        }
    }

    public func countAssets(_ query: AssetQuery) async throws -> Int {
        let statement = try Self.postgresQuery(try AssetSelect.statement(query, count: true, dialect: .postgres))
        return try await read("count assets") { connection, logger in
            try await connection.rows(statement, logger).first.map { try $0["count"].decode(Int.self) } ?? 0
        }
    }

    /// A statement `AssetSelect` wrote (`$n` placeholders) with its values bound as the table keeps
    /// them: booleans 0 or 1, dates seconds since 1970.
    static func postgresQuery(_ fragment: SQLFragment) throws -> PostgresQuery {
        var bindings = PostgresBindings(capacity: fragment.arguments.count)
        for value in fragment.arguments {
            switch value {
            case .integer(let number): bindings.append(number)
            case .real(let number): bindings.append(number)
            case .string(let text): bindings.append(text)
            case .date(let date): bindings.append(date.timeIntervalSince1970)
            case .bool(let flag): bindings.append(Int64(flag ? 1 : 0))
            case .null: bindings.appendNull()
            }
        }
        return PostgresQuery(unsafeSQL: fragment.sql, binds: bindings)
    }

    /// The asset in `row` (`AssetColumns`, and the SELECT's `represents_burst`).
    static func storedAsset(_ row: PostgresRandomAccessRow) throws -> StoredAsset {
        var stored = try AssetColumns.storedAsset { column in
            let cell = row[column.name]
            let value: FetchValue? =
                switch column.type.storage {
                case .integer: try cell.decode(Int64?.self).map { .integer($0) }
                case .real: try cell.decode(Double?.self).map { .real($0) }
                case .text: try cell.decode(String?.self).map { .string($0) }
                }
            return value ?? .null
        }
        stored.asset.representsBurst = try row["represents_burst"].decode(Bool?.self) ?? false
        return stored
    }

    public func albums() async throws -> [AlbumRecord] {
        try await read("read the library's albums") { connection, logger in
            try await connection.rows(
                """
                SELECT a.identifier, a.title,
                    (SELECT count(*) FROM reel_library_album_asset m WHERE m.album = a.identifier) AS n
                FROM reel_library_album a ORDER BY a.title, a.identifier
                """, logger
            ).map {
                AlbumRecord(
                    identifier: try $0["identifier"].decode(String.self), title: try $0["title"].decode(String.self),
                    assetCount: try $0["n"].decode(Int.self))
            }
        }
    }

    public func albumMembers(_ identifier: String) async throws -> [String] {
        try await read("read an album") { connection, logger in
            guard
                !(try await connection.rows(
                    "SELECT 1 AS found FROM reel_library_album WHERE identifier = \(identifier)", logger
                )
                .isEmpty)
            else { throw LibraryError(.notFound, "no album \(identifier)") }
            return try await connection.rows(
                """
                SELECT local_identifier FROM reel_library_album_asset WHERE album = \(identifier) ORDER BY position
                """, logger
            ).map { try $0["local_identifier"].decode(String.self) }
        }
    }

    public func currentChangeToken() async throws -> LibraryChangeToken {
        try await read("read the library's change token") { connection, logger in
            try await Self.token(connection, logger)
        }
    }

    public func changes(since token: LibraryChangeToken) async throws -> LibraryChanges {
        try await run("read the library's changes") { client, logger in
            try await client.checkedTransaction(logger: logger) { connection in
                // One snapshot for the token and the rows it covers (see the type's description).
                try await connection.checkedQuery(
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
                let now = try await Self.token(connection, logger)
                guard token.library == now.library else {
                    throw LibraryError(
                        .invalidToken,
                        "the change token \(token) belongs to another library (this one is \(now.library))")
                }
                guard token.sequence <= now.sequence else {
                    throw LibraryError(
                        .invalidToken, "the change token \(token) is from the future (now \(now.sequence))")
                }
                let since = token.sequence
                func identifiers(_ query: PostgresQuery) async throws -> [String] {
                    try await connection.rows(query, logger).map { try $0["local_identifier"].decode(String.self) }
                }
                let inserted = try await identifiers(
                    """
                    SELECT local_identifier FROM reel_library_asset WHERE created_seq > \(since) ORDER BY local_identifier
                    """)
                let updated = try await identifiers(
                    """
                    SELECT local_identifier FROM reel_library_asset WHERE created_seq <= \(since) AND changed_seq > \(since)
                    ORDER BY local_identifier
                    """)
                let deleted = try await identifiers(
                    """
                    SELECT local_identifier FROM reel_library_deleted_asset
                    WHERE deleted_seq > \(since) AND created_seq <= \(since) ORDER BY local_identifier
                    """)
                return LibraryChanges(inserted: inserted, updated: updated, deleted: deleted, token: now)
            }
        }
    }
}

extension PostgresConnection {
    /// Runs `query` and collects its rows.
    func rows(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRandomAccessRow] {
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await self.checkedQuery(query, logger: logger) { rows.append(row.makeRandomAccess()) }
        return rows
    }
}
