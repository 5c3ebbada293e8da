import Foundation

#if PhotoLibrary
    import GRDB
#endif

// The photo library's embedded store, left out of a build without the PhotoLibrary trait (GRDB).
#if PhotoLibrary
    extension SQLiteLibraryStore {
        public func apply(_ operations: [LibraryOperation]) async throws -> [String?] {
            guard !operations.isEmpty else { return [] }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            do {
                return try await pool.write { db in
                    let sequence = try SQLiteLibraryStore.token(db).sequence + 1
                    try db.execute(
                        sql: "UPDATE library_info SET value = ? WHERE key = 'sequence'", arguments: [String(sequence)])
                    var results: [String?] = []
                    for operation in operations {
                        results.append(
                            try SQLiteLibraryStore.apply(operation, db, sequence: sequence, encoder: encoder))
                    }
                    return results
                }
            } catch let error as LibraryError {
                throw error
            } catch {
                throw LibraryError(.storeFailed, "the library \(path) could not be written: \(error)")
            }
        }

        static func apply(_ operation: LibraryOperation, _ db: Database, sequence: Int64, encoder: JSONEncoder) throws
            -> String?
        {
            switch operation {
            case .putFile(let file):
                let facts = String(decoding: try encoder.encode(file.facts), as: UTF8.self)
                // Cached statements: compiling each one again (GRDB's authorizer on every column) was
                // about 7 % of a first scan's CPU time (perf, 20,000 files).
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO file (path, folder, name, size, modified_ns, content_hash, content_identifier, media_type, facts)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(
                    arguments: [
                        file.path, file.folder, file.name, file.stamp.size, file.stamp.modifiedNanoseconds,
                        file.contentHash,
                        file.facts.contentIdentifier, file.facts.mediaType.rawValue, facts,
                    ])
                return nil
            case .removeFile(let path):
                try db.execute(sql: "DELETE FROM file WHERE path = ?", arguments: [path])
                return nil
            case .insertAsset(let stored):
                let copies = try Int.fetchAll(
                    db.cachedStatement(
                        sql: "SELECT copy_number FROM asset WHERE content_hash = ? ORDER BY copy_number"),
                    arguments: [stored.asset.contentHash])
                var copy = 1
                for used in copies where used == copy { copy += 1 }
                let identifier = LibraryIdentity.localIdentifier(contentHash: stored.asset.contentHash, copy: copy)
                try db.cachedStatement(sql: "DELETE FROM deleted_asset WHERE local_identifier = ?").execute(
                    arguments: [identifier])
                try insert(stored, identifier: identifier, copy: copy, db, sequence: sequence)
                return identifier
            case .updateAsset(let stored):
                let a = stored.asset
                try db.cachedStatement(sql: updateAsset).execute(
                    arguments: StatementArguments(
                        AssetColumns.updateValues(stored, sequence: sequence).map(databaseValue)))
                try requireChange(db, "asset", a.localIdentifier)
                return a.localIdentifier
            case .deleteAsset(let identifier):
                guard
                    let created = try Int64.fetchOne(
                        db, sql: "SELECT created_seq FROM asset WHERE local_identifier = ?", arguments: [identifier])
                else { throw LibraryError(.notFound, "no asset \(identifier)") }
                try db.execute(sql: "DELETE FROM asset WHERE local_identifier = ?", arguments: [identifier])
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO deleted_asset (local_identifier, created_seq, deleted_seq) VALUES (?, ?, ?)",
                    arguments: [identifier, created, sequence])
                return identifier
            case .setFavorite(let identifier, let value):
                try db.execute(
                    sql: "UPDATE asset SET is_favorite = ?, changed_seq = ? WHERE local_identifier = ?",
                    arguments: [value, sequence, identifier])
                try requireChange(db, "asset", identifier)
                return identifier
            case .setHidden(let identifier, let value):
                try db.execute(
                    sql: "UPDATE asset SET is_hidden = ?, changed_seq = ? WHERE local_identifier = ?",
                    arguments: [value, sequence, identifier])
                try requireChange(db, "asset", identifier)
                return identifier
            case .recordSkip(let skip):
                try db.execute(
                    sql:
                        "INSERT OR REPLACE INTO skipped_file (path, folder, reason, size, modified_ns) VALUES (?, ?, ?, ?, ?)",
                    arguments: [
                        skip.path, folder(of: skip.path), skip.reason, skip.stamp?.size,
                        skip.stamp?.modifiedNanoseconds,
                    ])
                return nil
            case .clearSkip(let path):
                try db.execute(sql: "DELETE FROM skipped_file WHERE path = ?", arguments: [path])
                return nil
            case .createAlbum(let identifier, let title):
                try db.execute(
                    sql: "INSERT INTO album (identifier, title) VALUES (?, ?)", arguments: [identifier, title])
                return identifier
            case .renameAlbum(let identifier, let title):
                try db.execute(sql: "UPDATE album SET title = ? WHERE identifier = ?", arguments: [title, identifier])
                try requireChange(db, "album", identifier)
                return identifier
            case .deleteAlbum(let identifier):
                try db.execute(sql: "DELETE FROM album WHERE identifier = ?", arguments: [identifier])
                try requireChange(db, "album", identifier)
                return identifier
            case .addToAlbum(let identifier, let members):
                guard
                    try Bool.fetchOne(db, sql: "SELECT 1 FROM album WHERE identifier = ?", arguments: [identifier])
                        != nil
                else {
                    throw LibraryError(.notFound, "no album \(identifier)")
                }
                var position =
                    try Int.fetchOne(
                        db, sql: "SELECT coalesce(max(position), 0) FROM album_asset WHERE album = ?",
                        arguments: [identifier]) ?? 0
                for member in members {
                    guard
                        try Bool.fetchOne(
                            db, sql: "SELECT 1 FROM asset WHERE local_identifier = ?", arguments: [member])
                            != nil
                    else { throw LibraryError(.notFound, "no asset \(member)") }
                    position += 1
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO album_asset (album, local_identifier, position) VALUES (?, ?, ?)",
                        arguments: [identifier, member, position])
                }
                return identifier
            case .removeFromAlbum(let identifier, let members):
                for member in members {
                    try db.execute(
                        sql: "DELETE FROM album_asset WHERE album = ? AND local_identifier = ?",
                        arguments: [identifier, member])
                }
                return identifier
            }
        }

        static func insert(_ stored: StoredAsset, identifier: String, copy: Int, _ db: Database, sequence: Int64) throws
        {
            let values = AssetColumns.insertValues(stored, identifier: identifier, copy: copy, sequence: sequence)
            try db.cachedStatement(sql: insertAsset).execute(arguments: StatementArguments(values.map(databaseValue)))
        }

        static let insertAsset = AssetColumns.insert(.sqlite)
        static let updateAsset = AssetColumns.update(.sqlite)

        static func requireChange(_ db: Database, _ what: String, _ identifier: String) throws {
            guard db.changesCount > 0 else { throw LibraryError(.notFound, "no \(what) \(identifier)") }
        }

        static func folder(of path: String) -> String { PathParts.folder(of: path) }
    }
#endif
