import Foundation
import Testing

@testable import ReelLibrary

/// `AssetColumns` is the one list of an asset's stored columns: every predicate key has its column
/// there, the parser asks a key for its column's type of literal, and an update keeps exactly the
/// columns the library owns. (The contract's "every stored field" case runs the table through both
/// stores; `SQLiteContractTests` and `PostgresLibraryStoreTests` hold it against each schema.)
@Suite("Asset columns")
struct AssetColumnsTests {
    @Test("column names are unique, and each predicate key has exactly one column")
    func namesAndKeys() {
        let names = AssetColumns.all.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
        let keyed = AssetColumns.all.compactMap(\.fetchKey)
        #expect(Set(keyed).count == keyed.count, "one column per key: \(keyed)")
        #expect(Set(keyed) == Set(FetchKey.allCases), "every key has a column, and no column a key that does not exist")
        for key in FetchKey.allCases {
            let column = AssetColumns.column(for: key)
            #expect(column.fetchKey == key)
            #expect(AssetSelect.column(key) == "a.\(column.name)")
            #expect(column.isRead, "a key's column is read back into the asset")
        }
    }

    /// A literal of each column type, as a predicate writes it.
    static func literal(_ type: AssetColumnType) -> String {
        switch type {
        case .integer: "3"
        case .real: "1.5"
        case .text: "\"x\""
        case .flag: "TRUE"
        case .date: "\"2024-01-02\""
        }
    }

    @Test("every name the parser accepts compares with its column's type of literal, rendered on that column")
    func parserKeys() throws {
        #expect(
            FetchKey.allowedNames == [
                "SELF", "localIdentifier", "creationDate", "modificationDate", "mediaType", "mediaSubtypes", "duration",
                "pixelWidth", "pixelHeight", "favorite", "isFavorite", "hidden", "isHidden", "burstIdentifier",
                "hasAdjustments",
            ])
        #expect(FetchKey(name: "SELF") == .localIdentifier && FetchKey(name: "hidden") == .isHidden)
        #expect(FetchKey(name: "self") == nil && FetchKey(name: "representsBurst") == nil)
        for name in FetchKey.allowedNames {
            let key = try #require(FetchKey(name: name), "\(name)")
            let column = AssetColumns.column(for: key)
            let predicate = try PredicateParser.parse("\(name) == \(Self.literal(column.type))")
            let rendered = SQLRenderer(column: AssetSelect.column).render(predicate)
            #expect(rendered.sql == "a.\(column.name) = ?", "\(name)")
            #expect(rendered.arguments.count == 1)
            let other: AssetColumnType = column.type == .text ? .integer : .text
            #expect(throws: LibraryError.self, "\(name) refuses a literal of another type") {
                try PredicateParser.parse("\(name) == \(Self.literal(other))")
            }
        }
    }

    @Test("an insert writes every column; an update keeps the identifier, the copy and the library's own state")
    func insertAndUpdate() {
        #expect(AssetColumns.inserted.map(\.name) == AssetColumns.all.map(\.name))
        let kept = Set(AssetColumns.all.map(\.name)).subtracting(AssetColumns.updated.map(\.name))
        #expect(kept == ["local_identifier", "copy_number", "is_favorite", "is_hidden", "added_date", "created_seq"])
        let derived = Set(AssetColumns.all.map(\.name)).subtracting(AssetColumns.decoded.map(\.name))
        #expect(derived == ["copy_number", "folder", "stem", "created_seq", "changed_seq"])
        let stored = StoredAsset(
            asset: LibraryAsset(
                localIdentifier: "x/L0/001", mediaType: .image, modificationDate: Date(timeIntervalSince1970: 1),
                playbackStyle: .image, originalFilename: "IMG_1.HEIC", contentHash: "ab", path: "/p/q/IMG_1_HEVC.HEIC",
                addedDate: Date(timeIntervalSince1970: 2)))
        func value(_ name: String, _ write: AssetWrite) -> FetchValue? {
            AssetColumns.all.first { $0.name == name }?.value(of: stored, write)
        }
        let count = AssetColumns.all.count
        #expect(AssetColumns.insert(.sqlite).hasPrefix("INSERT INTO asset (local_identifier, content_hash, "))
        #expect(AssetColumns.insert(.postgres).hasPrefix("INSERT INTO reel_library_asset (local_identifier, "))
        #expect(AssetColumns.insert(.postgres).hasSuffix(", $\(count - 1), $\(count))"))
        #expect(AssetColumns.update(.sqlite).hasSuffix("has_adjustments = ? WHERE local_identifier = ?"))
        #expect(AssetColumns.update(.postgres).hasSuffix("WHERE local_identifier = $\(count - kept.count + 1)"))
        #expect(AssetColumns.insertValues(stored, identifier: "y/L0/002", copy: 2, sequence: 7).count == count)
        #expect(AssetColumns.updateValues(stored, sequence: 7).last == .string("x/L0/001"))
        let write = AssetWrite(sequence: 7, copy: 2)
        #expect(value("folder", write) == .string("/p/q") && value("stem", write) == .string("img_1"))
        #expect(value("copy_number", write) == .integer(2) && value("created_seq", write) == .integer(7))
        #expect(value("changed_seq", write) == .integer(7) && value("latitude", write) == .null)
    }

    @Test("a row's value of the wrong type, or a NULL where none is allowed, is store-failed naming the column")
    func mistypedRows() throws {
        let good: (AssetColumn) -> FetchValue = { column in
            switch column.type.storage {
            case .integer: .integer(1)
            case .real: .real(1)
            case .text: .string("t")
            }
        }
        let decoded = try AssetColumns.storedAsset(good)
        #expect(decoded.asset.location == LibraryLocation(latitude: 1, longitude: 1, altitude: 1))
        let noLongitude = try AssetColumns.storedAsset { $0.name == "longitude" ? .null : good($0) }
        #expect(noLongitude.asset.location == nil, "a location needs both coordinates")
        for (name, value) in [("pixel_width", FetchValue.string("wide")), ("path", .null), ("is_hidden", .real(1))] {
            do {
                _ = try AssetColumns.storedAsset { $0.name == name ? value : good($0) }
                Issue.record("\(name) = \(value) was accepted")
            } catch let error as LibraryError {
                #expect(error.code == .storeFailed && error.message.contains(name), "\(error)")
            }
        }
    }
}
