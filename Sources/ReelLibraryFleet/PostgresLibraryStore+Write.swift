import Foundation
import Logging
import PostgresNIO
import ReelLibrary

extension PostgresLibraryStore {
    public func apply(_ operations: [LibraryOperation]) async throws -> [String?] {
        guard !operations.isEmpty else { return [] }
        // A scan's batch (128 files and their assets) is a few hundred statements; the request's limit
        // leaves room for that behind another machine's batch.
        return try await run("write to the library", within: .seconds(120)) { client, logger in
            try await client.checkedTransaction(logger: logger) { connection in
                // Waiting for another writer's turn (see the type's description) may take longer than
                // a worker's limits (lock 5 s, statement 10 s with the default lease), which also bound
                // that wait; a scan's batch holds the turn for well under a second.
                try await connection.checkedQuery("SET LOCAL lock_timeout = '60s'", logger: logger)
                try await connection.checkedQuery("SET LOCAL statement_timeout = '90s'", logger: logger)
                let next = try await connection.rows(
                    "UPDATE reel_library_state SET sequence = sequence + 1 RETURNING sequence", logger)
                guard let sequence = try next.first?["sequence"].decode(Int64.self) else {
                    throw LibraryError(.storeFailed, "the library's state row is missing; run `reel db migrate`")
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                var results: [String?] = []
                for operation in operations {
                    results.append(
                        try await Self.apply(operation, connection, logger, sequence: sequence, encoder: encoder))
                }
                return results
            }
        }
    }

    static func apply(
        _ operation: LibraryOperation, _ connection: PostgresConnection, _ logger: Logger, sequence: Int64,
        encoder: JSONEncoder
    ) async throws -> String? {
        func run(_ query: PostgresQuery) async throws -> [PostgresRandomAccessRow] {
            try await connection.rows(query, logger)
        }
        /// Runs an UPDATE or DELETE ending in `RETURNING 1 AS done`; throws `.notFound` when it touched nothing.
        func require(_ query: PostgresQuery, _ what: String, _ identifier: String) async throws {
            if try await run(query).isEmpty { throw LibraryError(.notFound, "no \(what) \(identifier)") }
        }
        switch operation {
        case .putFile(let file):
            let facts = String(decoding: try encoder.encode(file.facts), as: UTF8.self)
            _ = try await run(
                """
                INSERT INTO reel_library_file
                    (path, folder, name, size, modified_ns, content_hash, content_identifier, media_type, facts)
                VALUES (\(file.path), \(file.folder), \(file.name), \(file.stamp.size), \(file.stamp.modifiedNanoseconds),
                    \(file.contentHash), \(file.facts.contentIdentifier), \(file.facts.mediaType.rawValue), \(facts))
                ON CONFLICT (path) DO UPDATE SET folder = EXCLUDED.folder, name = EXCLUDED.name, size = EXCLUDED.size,
                    modified_ns = EXCLUDED.modified_ns, content_hash = EXCLUDED.content_hash,
                    content_identifier = EXCLUDED.content_identifier, media_type = EXCLUDED.media_type,
                    facts = EXCLUDED.facts
                """)
            return nil
        case .removeFile(let path):
            _ = try await run("DELETE FROM reel_library_file WHERE path = \(path)")
            return nil
        case .insertAsset(let stored):
            let copies = try await run(
                """
                SELECT copy_number FROM reel_library_asset WHERE content_hash = \(stored.asset.contentHash)
                ORDER BY copy_number
                """
            ).map { try $0["copy_number"].decode(Int.self) }
            var copy = 1
            for used in copies where used == copy { copy += 1 }
            let identifier = LibraryIdentity.localIdentifier(contentHash: stored.asset.contentHash, copy: copy)
            _ = try await run("DELETE FROM reel_library_deleted_asset WHERE local_identifier = \(identifier)")
            _ = try await run(try insert(stored, identifier: identifier, copy: copy, sequence: sequence))
            return identifier
        case .updateAsset(let stored):
            let a = stored.asset
            let values = AssetColumns.updateValues(stored, sequence: sequence)
            try await require(try postgresQuery(SQLFragment(updateAsset, values)), "asset", a.localIdentifier)
            return a.localIdentifier
        case .deleteAsset(let identifier):
            let deleted = try await run(
                "DELETE FROM reel_library_asset WHERE local_identifier = \(identifier) RETURNING created_seq")
            guard let created = try deleted.first?["created_seq"].decode(Int64.self) else {
                throw LibraryError(.notFound, "no asset \(identifier)")
            }
            _ = try await run(
                """
                INSERT INTO reel_library_deleted_asset (local_identifier, created_seq, deleted_seq)
                VALUES (\(identifier), \(created), \(sequence))
                ON CONFLICT (local_identifier) DO UPDATE
                    SET created_seq = EXCLUDED.created_seq, deleted_seq = EXCLUDED.deleted_seq
                """)
            return identifier
        case .setFavorite(let identifier, let value):
            try await require(
                """
                UPDATE reel_library_asset SET is_favorite = \(value ? 1 : 0), changed_seq = \(sequence)
                WHERE local_identifier = \(identifier) RETURNING 1 AS done
                """, "asset", identifier)
            return identifier
        case .setHidden(let identifier, let value):
            try await require(
                """
                UPDATE reel_library_asset SET is_hidden = \(value ? 1 : 0), changed_seq = \(sequence)
                WHERE local_identifier = \(identifier) RETURNING 1 AS done
                """, "asset", identifier)
            return identifier
        case .recordSkip(let skip):
            _ = try await run(
                """
                INSERT INTO reel_library_skipped_file (path, folder, reason, size, modified_ns)
                VALUES (\(skip.path), \(folder(of: skip.path)), \(skip.reason), \(skip.stamp?.size),
                    \(skip.stamp?.modifiedNanoseconds))
                ON CONFLICT (path) DO UPDATE SET folder = EXCLUDED.folder, reason = EXCLUDED.reason,
                    size = EXCLUDED.size, modified_ns = EXCLUDED.modified_ns
                """)
            return nil
        case .clearSkip(let path):
            _ = try await run("DELETE FROM reel_library_skipped_file WHERE path = \(path)")
            return nil
        case .createAlbum(let identifier, let title):
            _ = try await run("INSERT INTO reel_library_album (identifier, title) VALUES (\(identifier), \(title))")
            return identifier
        case .renameAlbum(let identifier, let title):
            try await require(
                """
                UPDATE reel_library_album SET title = \(title) WHERE identifier = \(identifier) RETURNING 1 AS done
                """, "album", identifier)
            return identifier
        case .deleteAlbum(let identifier):
            try await require(
                "DELETE FROM reel_library_album WHERE identifier = \(identifier) RETURNING 1 AS done", "album",
                identifier)
            return identifier
        case .addToAlbum(let identifier, let members):
            let last = try await run(
                """
                SELECT (SELECT coalesce(max(position), 0) FROM reel_library_album_asset WHERE album = \(identifier))
                    AS position
                FROM reel_library_album WHERE identifier = \(identifier)
                """)
            guard var position = try last.first?["position"].decode(Int64.self) else {
                throw LibraryError(.notFound, "no album \(identifier)")
            }
            for member in members {
                guard
                    !(try await run("SELECT 1 AS found FROM reel_library_asset WHERE local_identifier = \(member)")
                        .isEmpty)
                else { throw LibraryError(.notFound, "no asset \(member)") }
                position += 1
                _ = try await run(
                    """
                    INSERT INTO reel_library_album_asset (album, local_identifier, position)
                    VALUES (\(identifier), \(member), \(position)) ON CONFLICT DO NOTHING
                    """)
            }
            return identifier
        case .removeFromAlbum(let identifier, let members):
            for member in members {
                _ = try await run(
                    """
                    DELETE FROM reel_library_album_asset WHERE album = \(identifier) AND local_identifier = \(member)
                    """)
            }
            return identifier
        }
    }

    static func insert(_ stored: StoredAsset, identifier: String, copy: Int, sequence: Int64) throws -> PostgresQuery {
        let values = AssetColumns.insertValues(stored, identifier: identifier, copy: copy, sequence: sequence)
        return try postgresQuery(SQLFragment(insertAsset, values))
    }

    static let insertAsset = AssetColumns.insert(.postgres)
    /// `require` needs a row back from an UPDATE that found its asset.
    static let updateAsset = AssetColumns.update(.postgres) + " RETURNING 1 AS done"

    static func folder(of path: String) -> String { (path as NSString).deletingLastPathComponent }

    /// The scan lock's advisory lock key ("rlsc" in ASCII): one library per database.
    static let scanLockKey: Int64 = 0x726C_7363

    /// `LibraryStore.exclusively`: a session advisory lock on a connection of its own (not the pool's,
    /// whose connections `body` needs), tried every 0.2 s for up to `limit`, held while `body` runs and
    /// released with the connection, so a process that dies holding it frees it when its connection
    /// closes. (A connection lost while `body` runs releases the lock early: the next holder may
    /// then overlap the rest of this one's writes, each of them still one transaction.)
    public func exclusively<T: Sendable>(waitingUpTo limit: Duration, _ body: @Sendable () async throws -> T)
        async throws -> T
    {
        let logger = database.logger
        do {
            return try await database.link.withOwnConnection { connection in
                let deadline = ContinuousClock.now + limit
                while true {
                    let rows = try await connection.rows(
                        "SELECT pg_try_advisory_lock(\(Self.scanLockKey)) AS locked", logger)
                    if try rows.first?["locked"].decode(Bool.self) == true { break }
                    guard ContinuousClock.now < deadline else {
                        throw LibraryError(.busy, "another scan or save is writing to the library in \(database.url)")
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
                let result = try await body()
                _ = try? await connection.rows("SELECT pg_advisory_unlock(\(Self.scanLockKey)) AS unlocked", logger)
                return result
            }
        } catch let error as LibraryError {
            throw error
        } catch let error as PSQLError {
            let reason = error.serverInfo?[.message] ?? "no connection (\(error.code))"
            throw LibraryError(.storeFailed, "cannot take the library's scan lock in \(database.url): \(reason)")
        }
    }
}
