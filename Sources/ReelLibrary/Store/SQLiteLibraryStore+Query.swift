import Foundation
import GRDB

extension SQLiteLibraryStore {
    /// The column of each PhotoKit key in the `asset` table (aliased `a`).
    static func column(_ key: FetchKey) -> String {
        switch key {
        case .localIdentifier: "a.local_identifier"
        case .creationDate: "a.creation_date"
        case .modificationDate: "a.modification_date"
        case .mediaType: "a.media_type"
        case .mediaSubtypes: "a.media_subtypes"
        case .duration: "a.duration"
        case .pixelWidth: "a.pixel_width"
        case .pixelHeight: "a.pixel_height"
        case .isFavorite: "a.is_favorite"
        case .isHidden: "a.is_hidden"
        case .burstIdentifier: "a.burst_identifier"
        }
    }

    /// Whether `a` stands for its burst: no burst, or the first of it by capture time.
    static let representsBurstCondition = """
        (a.burst_identifier IS NULL OR a.local_identifier = (SELECT b.local_identifier FROM asset b \
        WHERE b.burst_identifier = a.burst_identifier ORDER BY b.creation_date, b.local_identifier LIMIT 1))
        """
    static let representsBurst = "\(representsBurstCondition) AS represents_burst"

    static func databaseValue(_ value: FetchValue) -> DatabaseValue {
        switch value {
        case .integer(let number): number.databaseValue
        case .real(let number): number.databaseValue
        case .string(let text): text.databaseValue
        case .date(let date): date.timeIntervalSince1970.databaseValue
        case .bool(let flag): (flag ? 1 : 0).databaseValue
        case .null: .null
        }
    }

    /// The SELECT for `query`: its scope, PhotoKit's default filters, the predicate (bound
    /// parameters only), the order and the limit.
    static func select(_ query: AssetQuery, count: Bool) throws -> (sql: String, arguments: StatementArguments) {
        var conditions: [String] = []
        var values: [DatabaseValue] = []
        var join = ""
        switch query.scope {
        case .library: break
        case .userAlbum(let identifier):
            join = "JOIN album_asset m ON m.local_identifier = a.local_identifier AND m.album = ?"
            values.append(identifier.databaseValue)
        case .folder(let folder):
            conditions.append("a.folder = ?")
            values.append(folder.databaseValue)
        case .identifiers(let identifiers):
            conditions.append("a.local_identifier IN (SELECT value FROM json_each(?))")
            values.append(String(decoding: try JSONEncoder().encode(identifiers), as: UTF8.self).databaseValue)
        }
        if !query.includeHiddenAssets { conditions.append("a.is_hidden = 0") }
        if !query.includeAllBurstAssets { conditions.append(representsBurstCondition) }
        if let since = query.addedSince {
            conditions.append("a.added_date >= ?")
            values.append(since.timeIntervalSince1970.databaseValue)
        }
        if let style = query.playbackStyle {
            conditions.append("a.playback_style = ?")
            values.append(style.rawValue.databaseValue)
        }
        let renderer = SQLRenderer(column: column)
        if let predicate = query.predicate {
            let fragment = renderer.render(predicate)
            conditions.append(fragment.sql)
            values += fragment.arguments.map(databaseValue)
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        if count {
            return ("SELECT count(*) FROM asset a \(join) \(whereClause)", StatementArguments(values))
        }
        var order = renderer.orderBy(query.sort)
        if case .userAlbum = query.scope, query.sort.isEmpty { order = "m.position ASC" }
        var sql = "SELECT a.*, \(representsBurst) FROM asset a \(join) \(whereClause) ORDER BY \(order)"
        if query.limit > 0 {
            sql += " LIMIT ?"
            values.append(query.limit.databaseValue)
        }
        return (sql, StatementArguments(values))
    }

    static func storedAsset(_ row: Row) -> StoredAsset {
        var location: LibraryLocation?
        if let latitude: Double = row["latitude"], let longitude: Double = row["longitude"] {
            location = LibraryLocation(latitude: latitude, longitude: longitude, altitude: row["altitude"])
        }
        let creation: Double? = row["creation_date"]
        let pairing: String? = row["pairing"]
        let asset = LibraryAsset(
            localIdentifier: row["local_identifier"],
            mediaType: MediaType(rawValue: row["media_type"]) ?? .unknown,
            mediaSubtypes: MediaSubtypes(rawValue: UInt(row["media_subtypes"] as Int64)),
            pixelWidth: row["pixel_width"], pixelHeight: row["pixel_height"], duration: row["duration"],
            creationDate: creation.map { Date(timeIntervalSince1970: $0) },
            creationTimeZoneOffset: row["creation_time_zone_offset"],
            modificationDate: Date(timeIntervalSince1970: row["modification_date"]), location: location,
            isFavorite: row["is_favorite"], isHidden: row["is_hidden"], burstIdentifier: row["burst_identifier"],
            representsBurst: row["represents_burst"] ?? true,
            playbackStyle: PlaybackStyle(rawValue: row["playback_style"]) ?? .unsupported,
            sourceType: AssetSourceType(rawValue: row["source_type"]) ?? .typeUserLibrary,
            originalFilename: row["original_filename"], contentIdentifier: row["content_identifier"],
            pairing: pairing.flatMap(PairingKind.init(rawValue:)), stillImageTime: row["still_image_time"],
            contentHash: row["content_hash"], path: row["path"],
            addedDate: Date(timeIntervalSince1970: row["added_date"]))
        return StoredAsset(asset: asset, pairedVideoPath: row["paired_video_path"])
    }
}
