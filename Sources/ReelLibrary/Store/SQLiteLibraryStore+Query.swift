import Foundation

#if PhotoLibrary
    import GRDB
#endif

// The photo library's embedded store, left out of a build without the PhotoLibrary trait (GRDB).
#if PhotoLibrary
    extension SQLiteLibraryStore {
        /// Every asset read selects `represents_burst` too (`AssetSelect`, shared with other stores).
        static let representsBurst = AssetSelect.representsBurst(.sqlite)

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

        /// The SELECT for `query` (`AssetSelect` in SQLite's dialect), its parameters bound.
        static func select(_ query: AssetQuery, count: Bool) throws -> (sql: String, arguments: StatementArguments) {
            let statement = try AssetSelect.statement(query, count: count, dialect: .sqlite)
            return (statement.sql, StatementArguments(statement.arguments.map(databaseValue)))
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
                representsBurst: row["represents_burst"] ?? false,
                playbackStyle: PlaybackStyle(rawValue: row["playback_style"]) ?? .unsupported,
                sourceType: AssetSourceType(rawValue: row["source_type"]) ?? .typeUserLibrary,
                originalFilename: row["original_filename"], contentIdentifier: row["content_identifier"],
                pairing: pairing.flatMap(PairingKind.init(rawValue:)), stillImageTime: row["still_image_time"],
                contentHash: row["content_hash"], path: row["path"],
                addedDate: Date(timeIntervalSince1970: row["added_date"]),
                hasAdjustments: row["has_adjustments"] ?? false)
            return StoredAsset(
                asset: asset, pairedVideoPath: row["paired_video_path"], fullSizePhotoPath: row["full_size_photo_path"],
                adjustmentDataPath: row["adjustment_data_path"],
                fullSizePairedVideoPath: row["full_size_paired_video_path"])
        }
    }
#endif
