import Foundation

/// The one list of a library asset's stored columns: each column's name, type, how it is read from a
/// `StoredAsset` (or from the write's own numbers), how a row's value is set back, and the predicate
/// key (`FetchKey`) it answers to. Both stores render their INSERT, UPDATE and row decoding from it
/// (`SQLiteLibraryStore`, `PostgresLibraryStore`), and `AssetSelect` and `PredicateParser` take a
/// key's column and value type from it.
///
/// A new stored field is an entry here, plus a migration in each store (`SQLiteMigrations`,
/// `LibraryMigrations`) adding the column with the same name: SQLite `INTEGER`/`REAL`/`TEXT`,
/// PostgreSQL `bigint`/`double precision`/`text` (see `AssetColumnType`). A fetchable one also gets
/// its `FetchKey` case.
package enum AssetColumns {
    /// The identifier column: the key an update is made by (`WHERE local_identifier = …`).
    package static let identifier = column(
        "local_identifier", \.asset.localIdentifier, .onInsert, key: .localIdentifier)

    /// Every stored column of the `asset` table, in the schema's order.
    package static let all: [AssetColumn] = [
        identifier,
        column("content_hash", \.asset.contentHash),
        AssetColumn("copy_number", .integer, written: .onInsert) { _, write in (write.copy ?? 0).storedValue },
        column("path", \.asset.path),
        AssetColumn("folder", .text) { stored, _ in .string(PathParts.folder(of: stored.asset.path)) },
        AssetColumn("stem", .text) { stored, _ in .string(LivePhotoRules.stem(of: stored.asset.path)) },
        column("paired_video_path", \.pairedVideoPath),
        column("media_type", \.asset.mediaType, key: .mediaType),
        column("media_subtypes", \.asset.mediaSubtypes, key: .mediaSubtypes),
        column("pixel_width", \.asset.pixelWidth, key: .pixelWidth),
        column("pixel_height", \.asset.pixelHeight, key: .pixelHeight),
        column("duration", \.asset.duration, key: .duration),
        column("creation_date", \.asset.creationDate, key: .creationDate),
        column("creation_time_zone_offset", \.asset.creationTimeZoneOffset),
        column("modification_date", \.asset.modificationDate, key: .modificationDate),
        location("latitude", \.latitude),
        location("longitude", \.longitude),
        AssetColumn(
            "altitude", .real, isNullable: true,
            value: { stored, _ in (stored.asset.location?.altitude).storedValue },
            assign: { stored, value in
                stored.asset.location = stored.asset.location ?? .unread
                stored.asset.location?.altitude = try Double?(column: "altitude", value)
            }),
        column("is_favorite", \.asset.isFavorite, .onInsert, key: .isFavorite),
        column("is_hidden", \.asset.isHidden, .onInsert, key: .isHidden),
        column("burst_identifier", \.asset.burstIdentifier, key: .burstIdentifier),
        column("playback_style", \.asset.playbackStyle),
        column("source_type", \.asset.sourceType),
        column("original_filename", \.asset.originalFilename),
        column("content_identifier", \.asset.contentIdentifier),
        // A kind this build does not know (written by a newer one) reads as no pairing.
        AssetColumn(
            "pairing", .text, isNullable: true,
            value: { stored, _ in stored.asset.pairing.map { .string($0.rawValue) } ?? .null },
            assign: { stored, value in
                stored.asset.pairing = try String?(column: "pairing", value).flatMap(PairingKind.init(rawValue:))
            }),
        column("still_image_time", \.asset.stillImageTime),
        column("added_date", \.asset.addedDate, .onInsert),
        AssetColumn("created_seq", .integer, written: .onInsert) { _, write in .integer(write.sequence) },
        AssetColumn("changed_seq", .integer) { _, write in .integer(write.sequence) },
        column("full_size_photo_path", \.fullSizePhotoPath),
        column("adjustment_data_path", \.adjustmentDataPath),
        column("full_size_paired_video_path", \.fullSizePairedVideoPath),
        column("has_adjustments", \.asset.hasAdjustments, key: .hasAdjustments),
    ]

    /// The columns an insert writes: all of them.
    package static var inserted: [AssetColumn] { all }

    /// The columns an update writes; it keeps the others (the identifier and copy number, the
    /// library's own state: favorite, hidden, date added; and the change number it was created at).
    package static let updated = all.filter { $0.written == .always }

    /// The columns a row is decoded from (the others are derived, or the store's own numbers).
    package static let decoded = all.filter(\.isRead)

    /// The INSERT of an asset in `dialect`: every column, in the table's order (`insertValues`).
    package static func insert(_ dialect: SQLDialect) -> String {
        let names = inserted.map(\.name).joined(separator: ", ")
        let values = inserted.indices.map { dialect.placeholder($0 + 1) }.joined(separator: ", ")
        return "INSERT INTO \(dialect.tablePrefix)asset (\(names)) VALUES (\(values))"
    }

    /// The values `insert` binds: `stored` as the asset `identifier`, copy `copy`, at change `sequence`.
    package static func insertValues(_ stored: StoredAsset, identifier: String, copy: Int, sequence: Int64)
        -> [FetchValue]
    {
        var stored = stored
        stored.asset.localIdentifier = identifier
        let write = AssetWrite(sequence: sequence, copy: copy)
        return inserted.map { $0.value(of: stored, write) }
    }

    /// The UPDATE of an asset by identifier in `dialect`: the columns an update writes (`updateValues`).
    package static func update(_ dialect: SQLDialect) -> String {
        let assignments = updated.enumerated().map { "\($1.name) = \(dialect.placeholder($0 + 1))" }
        return """
            UPDATE \(dialect.tablePrefix)asset SET \(assignments.joined(separator: ", ")) \
            WHERE \(identifier.name) = \(dialect.placeholder(updated.count + 1))
            """
    }

    /// The values `update` binds: `stored`'s, at change `sequence`, then its identifier.
    package static func updateValues(_ stored: StoredAsset, sequence: Int64) -> [FetchValue] {
        updated.map { $0.value(of: stored, AssetWrite(sequence: sequence)) } + [.string(stored.asset.localIdentifier)]
    }

    /// The column of each predicate key.
    private static let byKey: [FetchKey: AssetColumn] = Dictionary(
        all.compactMap { column in column.fetchKey.map { ($0, column) } }, uniquingKeysWith: { first, _ in first })

    /// The column a predicate or sort key stands for.
    package static func column(for key: FetchKey) -> AssetColumn {
        guard let column = byKey[key] else { preconditionFailure("the key \(key) has no column in AssetColumns") }
        return column
    }

    /// A stored asset from a row: `value` gives each read column's value as the store keeps it
    /// (`.integer`, `.real`, `.string` or `.null`). `representsBurst` is not a column (the SELECT
    /// computes it): the store sets it.
    package static func storedAsset(_ value: (AssetColumn) throws -> FetchValue) throws -> StoredAsset {
        var stored = StoredAsset(
            asset: LibraryAsset(
                localIdentifier: "", mediaType: .unknown, modificationDate: .distantPast, playbackStyle: .unsupported,
                originalFilename: "", contentHash: "", path: "", addedDate: .distantPast))
        for column in decoded { try column.decode(try value(column), into: &stored) }
        // A location needs both coordinates; an altitude alone is none.
        if let location = stored.asset.location, location.latitude.isNaN || location.longitude.isNaN {
            stored.asset.location = nil
        }
        return stored
    }

    /// A column kept in a `StoredAsset` field, written by insert and update unless `written` says otherwise.
    static func column<Value: AssetColumnValue>(
        _ name: String, _ field: WritableKeyPath<StoredAsset, Value> & Sendable,
        _ written: AssetColumn.Written = .always, key: FetchKey? = nil
    ) -> AssetColumn {
        AssetColumn(
            name, Value.columnType, isNullable: Value.isNullable, written: written, key: key,
            value: { stored, _ in stored[keyPath: field].storedValue },
            assign: { stored, value in stored[keyPath: field] = try Value(column: name, value) })
    }

    /// A coordinate of the asset's location; a row with one coordinate NULL has no location.
    static func location(_ name: String, _ part: WritableKeyPath<LibraryLocation, Double> & Sendable) -> AssetColumn {
        AssetColumn(
            name, .real, isNullable: true,
            value: { stored, _ in stored.asset.location.map { .real($0[keyPath: part]) } ?? .null },
            assign: { stored, value in
                var location = stored.asset.location ?? .unread
                location[keyPath: part] = try Double?(column: name, value) ?? .nan
                stored.asset.location = location
            })
    }
}

extension LibraryLocation {
    /// A location being read from a row, before its coordinates are set.
    fileprivate static let unread = LibraryLocation(latitude: .nan, longitude: .nan)
}

/// How a column's values are kept, and what a predicate compares them with.
package enum AssetColumnType: Sendable {
    /// A whole number: SQLite `INTEGER`, PostgreSQL `bigint`.
    case integer
    /// SQLite `REAL`, PostgreSQL `double precision`.
    case real
    /// SQLite `TEXT`, PostgreSQL `text`.
    case text
    /// A boolean, kept as 0 or 1 in an integer column.
    case flag
    /// A date, kept as seconds since 1970 in a real column.
    case date

    /// How a store keeps a column's values.
    package enum Storage: Sendable {
        case integer, real, text
    }

    /// How a store keeps the value: a flag is an integer, a date a real.
    package var storage: Storage {
        switch self {
        case .integer, .flag: .integer
        case .real, .date: .real
        case .text: .text
        }
    }
}

/// What an insert or update writes besides the asset's fields: the change number of the batch, and
/// the copy number the store chose for an insert (an update keeps the stored one).
package struct AssetWrite: Sendable {
    package var sequence: Int64
    package var copy: Int?
    package init(sequence: Int64, copy: Int? = nil) {
        self.sequence = sequence
        self.copy = copy
    }
}

/// One column of `AssetColumns`.
package struct AssetColumn: Sendable {
    /// Which writes set a column.
    package enum Written: Sendable {
        /// Insert and update (the file's facts, and the columns derived from them).
        case always
        /// Insert only: an update keeps the stored value (the identifier, the library's own state).
        case onInsert
    }

    package let name: String
    package let type: AssetColumnType
    package let isNullable: Bool
    package let written: Written
    /// The predicate and sort key this column answers to, if any.
    package let fetchKey: FetchKey?
    private let read: @Sendable (StoredAsset, AssetWrite) -> FetchValue
    private let assign: (@Sendable (inout StoredAsset, FetchValue) throws -> Void)?

    /// A column; without `assign`, a row's value is not read back (derived, or the store's own).
    init(
        _ name: String, _ type: AssetColumnType, isNullable: Bool = false, written: Written = .always,
        key: FetchKey? = nil, value: @escaping @Sendable (StoredAsset, AssetWrite) -> FetchValue,
        assign: (@Sendable (inout StoredAsset, FetchValue) throws -> Void)? = nil
    ) {
        self.name = name
        self.type = type
        self.isNullable = isNullable
        self.written = written
        self.fetchKey = key
        self.read = value
        self.assign = assign
    }

    /// Whether a row's value is set back into the asset.
    package var isRead: Bool { assign != nil }

    /// The value a write binds (`.bool` for a flag, `.date` for a date: each store binds those as it
    /// keeps them, 0 or 1 and seconds since 1970).
    package func value(of stored: StoredAsset, _ write: AssetWrite) -> FetchValue { read(stored, write) }

    /// Sets the row's `value` (as the store keeps it) into `stored`; throws `.storeFailed` for a value
    /// of the wrong type or a NULL in a column that allows none.
    package func decode(_ value: FetchValue, into stored: inout StoredAsset) throws {
        try assign?(&stored, value)
    }
}

/// A field type a column keeps, with its column type and its conversions.
protocol AssetColumnValue: Sendable {
    static var columnType: AssetColumnType { get }
    static var isNullable: Bool { get }
    var storedValue: FetchValue { get }
    /// The field from a row's value; nil when the value does not fit.
    init?(stored value: FetchValue)
}

extension AssetColumnValue {
    static var isNullable: Bool { false }

    /// The field from `column`'s value, or `.storeFailed` naming the column.
    init(column: String, _ value: FetchValue) throws(LibraryError) {
        guard let field = Self(stored: value) else {
            throw LibraryError(
                .storeFailed, "the library's asset column \(column) holds \(value), not a \(Self.columnType) value")
        }
        self = field
    }
}

extension Optional: AssetColumnValue where Wrapped: AssetColumnValue {
    static var columnType: AssetColumnType { Wrapped.columnType }
    static var isNullable: Bool { true }
    var storedValue: FetchValue { self?.storedValue ?? .null }
    init?(stored value: FetchValue) {
        if value == .null {
            self = .none
            return
        }
        guard let wrapped = Wrapped(stored: value) else { return nil }
        self = .some(wrapped)
    }
}

extension String: AssetColumnValue {
    static var columnType: AssetColumnType { .text }
    var storedValue: FetchValue { .string(self) }
    init?(stored value: FetchValue) {
        guard case .string(let text) = value else { return nil }
        self = text
    }
}

extension Int: AssetColumnValue {
    static var columnType: AssetColumnType { .integer }
    var storedValue: FetchValue { .integer(Int64(self)) }
    init?(stored value: FetchValue) {
        guard case .integer(let number) = value else { return nil }
        self.init(truncatingIfNeeded: number)
    }
}

extension Double: AssetColumnValue {
    static var columnType: AssetColumnType { .real }
    var storedValue: FetchValue { .real(self) }
    init?(stored value: FetchValue) {
        switch value {
        case .real(let number): self = number
        case .integer(let number): self.init(number)
        default: return nil
        }
    }
}

extension Bool: AssetColumnValue {
    static var columnType: AssetColumnType { .flag }
    var storedValue: FetchValue { .bool(self) }
    init?(stored value: FetchValue) {
        switch value {
        case .integer(let number): self = number != 0
        case .bool(let flag): self = flag
        default: return nil
        }
    }
}

extension Date: AssetColumnValue {
    static var columnType: AssetColumnType { .date }
    var storedValue: FetchValue { .date(self) }
    init?(stored value: FetchValue) {
        guard let seconds = Double(stored: value) else { return nil }
        self.init(timeIntervalSince1970: seconds)
    }
}

/// PhotoKit's integer enumerations: a raw value this build does not know reads as `unread`.
protocol IntegerColumnValue: AssetColumnValue, RawRepresentable where RawValue == Int {
    static var unread: Self { get }
}

extension IntegerColumnValue {
    static var columnType: AssetColumnType { .integer }
    var storedValue: FetchValue { .integer(Int64(rawValue)) }
    init?(stored value: FetchValue) {
        guard let raw = Int(stored: value) else { return nil }
        self = Self(rawValue: raw) ?? .unread
    }
}

extension MediaType: IntegerColumnValue {
    static var unread: MediaType { .unknown }
}

extension PlaybackStyle: IntegerColumnValue {
    static var unread: PlaybackStyle { .unsupported }
}

extension AssetSourceType: IntegerColumnValue {
    static var unread: AssetSourceType { .typeUserLibrary }
}

extension MediaSubtypes: AssetColumnValue {
    static var columnType: AssetColumnType { .integer }
    var storedValue: FetchValue { .integer(Int64(truncatingIfNeeded: rawValue)) }
    init?(stored value: FetchValue) {
        guard case .integer(let number) = value else { return nil }
        self.init(rawValue: UInt(truncatingIfNeeded: number))
    }
}
