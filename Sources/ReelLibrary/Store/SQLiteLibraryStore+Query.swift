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

        /// The asset in `row` (`AssetColumns`, and the SELECT's `represents_burst`).
        static func storedAsset(_ row: Row) throws -> StoredAsset {
            var stored = try AssetColumns.storedAsset { column in
                switch try row.decode(DatabaseValue.self, forColumn: column.name).storage {
                case .null: .null
                case .int64(let number): .integer(number)
                case .double(let number): .real(number)
                case .string(let text): .string(text)
                case .blob(let data): .string(String(decoding: data, as: UTF8.self))
                }
            }
            stored.asset.representsBurst = row["represents_burst"] ?? false
            return stored
        }
    }
#endif
