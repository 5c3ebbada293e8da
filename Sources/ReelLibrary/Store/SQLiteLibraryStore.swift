import Foundation

#if PhotoLibrary
    import GRDB
#endif

// The photo library's embedded store, left out of a build without the PhotoLibrary trait (GRDB).
#if PhotoLibrary
    /// The embedded store: one SQLite file in WAL mode (readers never wait for the scan's writes),
    /// opened through GRDB, its schema brought up to date by versioned migrations on open.
    public final class SQLiteLibraryStore: LibraryStore {
        let pool: DatabasePool
        /// The database file.
        public let path: String

        /// Opens (creating when missing) the library database at `path` and runs pending migrations.
        /// Throws `LibraryError` (`.storeFailed`) naming the file when it cannot.
        public init(path: String) throws(LibraryError) {
            self.path = path
            do {
                let folder = (path as NSString).deletingLastPathComponent
                if !folder.isEmpty {
                    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                }
                var configuration = Configuration()
                configuration.busyMode = .timeout(30)
                configuration.label = "reel-library"
                pool = try DatabasePool(path: path, configuration: configuration)
                // Every commit reaches the disk before it returns (GRDB's WAL default is NORMAL, which a
                // power loss can roll back): a save-back or import that said "done" is never lost, so
                // it is never repeated as a duplicate. Scans commit in batches, so the cost is small.
                try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
                try SQLiteMigrations.migrator.migrate(pool)
            } catch {
                throw LibraryError(.storeFailed, "cannot open the library \(path): \(error)")
            }
        }

        /// The migrations this store knows and which of them have run.
        public func migrationStatus() throws -> (known: [String], applied: [String]) {
            let applied = try pool.read { try SQLiteMigrations.migrator.appliedIdentifiers($0) }
            return (SQLiteMigrations.migrator.migrations, Array(applied).sorted())
        }

        func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
            do {
                return try await pool.read(body)
            } catch let error as LibraryError {
                throw error
            } catch {
                throw LibraryError(.storeFailed, "the library \(path) could not be read: \(error)")
            }
        }

        /// The `synchronous` setting of the writing connection (2 is FULL), for the tests.
        func synchronousSetting() async throws -> Int {
            try await pool.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
        }

        public func refreshStatistics() async throws {
            do {
                try await pool.writeWithoutTransaction { try $0.execute(sql: "ANALYZE") }
            } catch {
                throw LibraryError(.storeFailed, "the library \(path) could not be analysed: \(error)")
            }
        }

        public func libraryIdentifier() async throws -> String {
            try await read { db in
                try String.fetchOne(db, sql: "SELECT value FROM library_info WHERE key = 'identifier'") ?? ""
            }
        }

        // MARK: Files

        public func fileStamps(inFolder folder: String) async throws -> [String: FileStamp] {
            try await read { db in
                var stamps: [String: FileStamp] = [:]
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT name, size, modified_ns FROM file WHERE folder = ?", arguments: [folder])
                while let row = try rows.next() {
                    stamps[row["name"]] = FileStamp(size: row["size"], modifiedNanoseconds: row["modified_ns"])
                }
                return stamps
            }
        }

        public func folders(under root: String) async throws -> [String] {
            let prefix = root.hasSuffix("/") ? root : root + "/"
            return try await read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT DISTINCT folder FROM file WHERE folder = ? OR substr(folder, 1, ?) = ?
                        UNION SELECT DISTINCT folder FROM skipped_file WHERE folder = ? OR substr(folder, 1, ?) = ?
                        """,
                    arguments: [root, prefix.utf8.count, prefix, root, prefix.utf8.count, prefix])
            }
        }

        static func fileRecord(_ row: Row) throws -> FileRecord {
            let facts = try JSONDecoder().decode(FileFacts.self, from: Data((row["facts"] as String).utf8))
            return FileRecord(
                path: row["path"], stamp: FileStamp(size: row["size"], modifiedNanoseconds: row["modified_ns"]),
                contentHash: row["content_hash"], facts: facts)
        }

        public func files(atPaths paths: [String]) async throws -> [FileRecord] {
            guard !paths.isEmpty else { return [] }
            let json = String(decoding: try JSONEncoder().encode(paths), as: UTF8.self)
            return try await read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM file WHERE path IN (SELECT value FROM json_each(?))", arguments: [json]
                )
                .map(SQLiteLibraryStore.fileRecord)
            }
        }

        public func files(contentHash hash: String, limit: Int) async throws -> [FileRecord] {
            try await read { db in
                try Row.fetchAll(
                    db.cachedStatement(sql: "SELECT * FROM file WHERE content_hash = ? ORDER BY path LIMIT ?"),
                    arguments: [hash, limit]
                )
                .map(SQLiteLibraryStore.fileRecord)
            }
        }

        public func files(contentIdentifier identifier: String, limit: Int) async throws -> [FileRecord] {
            try await read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM file WHERE content_identifier = ? ORDER BY path LIMIT ?",
                    arguments: [identifier, limit]
                ).map(SQLiteLibraryStore.fileRecord)
            }
        }

        public func files(inFolder folder: String) async throws -> [FileRecord] {
            try await read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM file WHERE folder = ? ORDER BY name", arguments: [folder])
                    .map(SQLiteLibraryStore.fileRecord)
            }
        }

        public func skippedFiles(under root: String) async throws -> [SkippedFile] {
            let prefix = root.hasSuffix("/") ? root : root + "/"
            return try await read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "SELECT path, reason, size, modified_ns FROM skipped_file WHERE folder = ? OR substr(folder, 1, ?) = ? ORDER BY path",
                    arguments: [root, prefix.utf8.count, prefix]
                ).map { row in
                    let size: Int64? = row["size"]
                    let modified: Int64? = row["modified_ns"]
                    let stamp = size.flatMap { size in modified.map { FileStamp(size: size, modifiedNanoseconds: $0) } }
                    return SkippedFile(path: row["path"], reason: row["reason"], stamp: stamp)
                }
            }
        }

        // MARK: Assets

        public func assets(localIdentifiers: [String]) async throws -> [StoredAsset] {
            guard !localIdentifiers.isEmpty else { return [] }
            return try await fetchAssets(
                AssetQuery(
                    scope: .identifiers(localIdentifiers), includeHiddenAssets: true, includeAllBurstAssets: true))
        }

        /// One read transaction: the asset and its files' records.
        public func assetWithFiles(_ localIdentifier: String) async throws -> (StoredAsset, [FileRecord])? {
            try await read { db in
                guard
                    let stored = try Row.fetchOne(
                        db.cachedStatement(
                            sql:
                                "SELECT a.*, \(SQLiteLibraryStore.representsBurst) FROM asset a WHERE a.local_identifier = ?"
                        ), arguments: [localIdentifier]
                    ).map(SQLiteLibraryStore.storedAsset)
                else { return nil }
                let paths = [stored.asset.path] + (stored.pairedVideoPath.map { [$0] } ?? []) + stored.editPaths
                let files = try paths.compactMap { path in
                    try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM file WHERE path = ?"), arguments: [path])
                        .map(SQLiteLibraryStore.fileRecord)
                }
                return (stored, files)
            }
        }

        public func asset(containingPath path: String) async throws -> StoredAsset? {
            try await read { db in
                try Row.fetchOne(
                    db,
                    sql:
                        "SELECT a.*, \(SQLiteLibraryStore.representsBurst) FROM asset a WHERE a.path = ? OR a.paired_video_path = ?",
                    arguments: [path, path]
                ).map(SQLiteLibraryStore.storedAsset)
            }
        }

        public func assets(contentIdentifier identifier: String, mediaType: MediaType, unpaired: Bool, limit: Int)
            async throws
            -> [StoredAsset]
        {
            let filter = unpaired ? "AND a.paired_video_path IS NULL AND a.pairing IS NULL" : ""
            return try await read { db in
                // INDEXED BY: without statistics SQLite's planner takes `paired_video_path IS NULL` on that
                // column's UNIQUE index as selective, and walks every unpaired asset for each lookup (a
                // first scan asks once per photo carrying an identifier: quadratic, 17 % of the CPU of a
                // 20,000-file scan with 500 such photos, perf); the identifier's index holds only its own.
                try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            SELECT a.*, \(SQLiteLibraryStore.representsBurst) FROM asset a INDEXED BY asset_by_content_identifier
                            WHERE a.content_identifier = ? AND a.media_type = ? \(filter) ORDER BY a.path LIMIT ?
                            """),
                    arguments: [identifier, mediaType.rawValue, limit]
                ).map(SQLiteLibraryStore.storedAsset)
            }
        }

        public func assets(inFolder folder: String, stem: String, limit: Int) async throws -> [StoredAsset] {
            try await read { db in
                // Cached: a scan asks this for nearly every new photo and short movie.
                try Row.fetchAll(
                    db.cachedStatement(
                        sql:
                            "SELECT a.*, \(SQLiteLibraryStore.representsBurst) FROM asset a WHERE a.folder = ? AND a.stem = ? ORDER BY a.path LIMIT ?"
                    ),
                    arguments: [folder, stem, limit]
                ).map(SQLiteLibraryStore.storedAsset)
            }
        }

        public func assets(named names: [(folder: String, stem: String)], limit: Int) async throws -> [[StoredAsset]] {
            guard !names.isEmpty else { return [] }
            let pairs = names.map { [$0.folder, $0.stem] }
            return try await read { db in
                let statement = try db.cachedStatement(
                    sql:
                        "SELECT a.*, \(SQLiteLibraryStore.representsBurst) FROM asset a WHERE a.folder = ? AND a.stem = ? ORDER BY a.path LIMIT ?"
                )
                return try pairs.map { pair in
                    try Row.fetchAll(statement, arguments: [pair[0], pair[1], limit]).map(
                        SQLiteLibraryStore.storedAsset)
                }
            }
        }

        public func unownedFiles(limit: Int) async throws -> [FileRecord] {
            try await read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT f.* FROM file f WHERE NOT EXISTS (SELECT 1 FROM asset a WHERE a.path = f.path)
                        AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.paired_video_path = f.path)
                        AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.full_size_photo_path = f.path)
                        AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.adjustment_data_path = f.path)
                        AND NOT EXISTS (SELECT 1 FROM asset a WHERE a.full_size_paired_video_path = f.path)
                        ORDER BY f.path LIMIT ?
                        """,
                    arguments: [limit]
                ).map(SQLiteLibraryStore.fileRecord)
            }
        }

        public func fetchAssets(_ query: AssetQuery) async throws -> [StoredAsset] {
            let statement = try SQLiteLibraryStore.select(query, count: false)
            return try await read { db in
                try Row.fetchAll(db, sql: statement.sql, arguments: statement.arguments).map(
                    SQLiteLibraryStore.storedAsset)
            }
        }

        public func assetFolders() async throws -> [FolderCount] {
            try await read { db in
                try Row.fetchAll(db, sql: "SELECT folder, count(*) AS n FROM asset GROUP BY folder ORDER BY folder")
                    .map { FolderCount(folder: $0["folder"], count: $0["n"]) }
            }
        }

        public func countAssets(_ query: AssetQuery) async throws -> Int {
            let statement = try SQLiteLibraryStore.select(query, count: true)
            return try await read { db in try Int.fetchOne(db, sql: statement.sql, arguments: statement.arguments) ?? 0
            }
        }

        // MARK: Albums and changes

        public func albums() async throws -> [AlbumRecord] {
            try await read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT a.identifier, a.title, (SELECT count(*) FROM album_asset m WHERE m.album = a.identifier) AS n
                        FROM album a ORDER BY a.title, a.identifier
                        """
                ).map { AlbumRecord(identifier: $0["identifier"], title: $0["title"], assetCount: $0["n"]) }
            }
        }

        public func albumMembers(_ identifier: String) async throws -> [String] {
            try await read { db in
                guard
                    try Bool.fetchOne(db, sql: "SELECT 1 FROM album WHERE identifier = ?", arguments: [identifier])
                        != nil
                else {
                    throw LibraryError(.notFound, "no album \(identifier)")
                }
                return try String.fetchAll(
                    db, sql: "SELECT local_identifier FROM album_asset WHERE album = ? ORDER BY position",
                    arguments: [identifier])
            }
        }

        public func currentChangeToken() async throws -> LibraryChangeToken {
            try await read { db in try SQLiteLibraryStore.token(db) }
        }

        static func token(_ db: Database) throws -> LibraryChangeToken {
            let identifier =
                try String.fetchOne(db, sql: "SELECT value FROM library_info WHERE key = 'identifier'") ?? ""
            let sequence =
                Int64(try String.fetchOne(db, sql: "SELECT value FROM library_info WHERE key = 'sequence'") ?? "0") ?? 0
            return LibraryChangeToken(library: identifier, sequence: sequence)
        }

        public func changes(since token: LibraryChangeToken) async throws -> LibraryChanges {
            try await read { db in
                let now = try SQLiteLibraryStore.token(db)
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
                let inserted = try String.fetchAll(
                    db, sql: "SELECT local_identifier FROM asset WHERE created_seq > ? ORDER BY local_identifier",
                    arguments: [since])
                let updated = try String.fetchAll(
                    db,
                    sql:
                        "SELECT local_identifier FROM asset WHERE created_seq <= ? AND changed_seq > ? ORDER BY local_identifier",
                    arguments: [since, since])
                let deleted = try String.fetchAll(
                    db,
                    sql:
                        "SELECT local_identifier FROM deleted_asset WHERE deleted_seq > ? AND created_seq <= ? ORDER BY local_identifier",
                    arguments: [since, since])
                return LibraryChanges(inserted: inserted, updated: updated, deleted: deleted, token: now)
            }
        }
    }
#endif
