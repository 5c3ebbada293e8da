import Foundation

/// SQL text with its parameters bound separately (never spliced into the text).
public struct SQLFragment: Sendable, Equatable {
    public var sql: String
    public var arguments: [FetchValue]
    public init(_ sql: String, _ arguments: [FetchValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }
}

/// Turns a parsed predicate and sort keys into SQL for any store: the store says how a key is
/// spelled as a column and how a placeholder is written (`?` for SQLite, `$1…` for PostgreSQL).
/// Every literal becomes a bound parameter; only column names the store chose and operators from a
/// fixed list reach the text.
public struct SQLRenderer: Sendable {
    /// The column or expression for a key.
    public var column: @Sendable (FetchKey) -> String
    /// The placeholder for the n-th parameter (1-based).
    public var placeholder: @Sendable (Int) -> String
    /// Parameters already bound before this fragment (PostgreSQL numbers them across the statement).
    public var firstParameter: Int

    public init(
        column: @escaping @Sendable (FetchKey) -> String,
        placeholder: @escaping @Sendable (Int) -> String = { _ in "?" },
        firstParameter: Int = 1
    ) {
        self.column = column
        self.placeholder = placeholder
        self.firstParameter = firstParameter
    }

    /// The WHERE condition for `predicate`.
    public func render(_ predicate: AssetPredicate) -> SQLFragment {
        var arguments: [FetchValue] = []
        let sql = render(predicate, &arguments)
        return SQLFragment(sql, arguments)
    }

    private func bind(_ value: FetchValue, _ arguments: inout [FetchValue]) -> String {
        arguments.append(value)
        return placeholder(firstParameter + arguments.count - 1)
    }

    private func render(_ predicate: AssetPredicate, _ arguments: inout [FetchValue]) -> String {
        switch predicate {
        case .constant(let value):
            return value ? "1 = 1" : "1 = 0"
        case .and(let terms):
            return "(" + terms.map { render($0, &arguments) }.joined(separator: " AND ") + ")"
        case .or(let terms):
            return "(" + terms.map { render($0, &arguments) }.joined(separator: " OR ") + ")"
        case .not(let inner):
            return "NOT (" + render(inner, &arguments) + ")"
        case .isIn(let key, let values):
            if values.isEmpty { return "1 = 0" }
            let list = values.map { bind($0, &arguments) }.joined(separator: ", ")
            return "\(column(key)) IN (\(list))"
        case .between(let key, let low, let high):
            let lowText = bind(low, &arguments)
            let highText = bind(high, &arguments)
            return "(\(column(key)) >= \(lowText) AND \(column(key)) <= \(highText))"
        case .compare(let operand, let op, let value):
            let left: String
            switch operand {
            case .key(let key): left = column(key)
            case .bitAnd(let key, let mask):
                left = "(\(column(key)) & \(bind(.integer(Int64(bitPattern: mask)), &arguments)))"
            }
            if value == .null {
                switch op {
                case .equal: return "\(left) IS NULL"
                case .notEqual: return "\(left) IS NOT NULL"
                default: return "1 = 0"
                }
            }
            return "\(left) \(op.rawValue == "==" ? "=" : op.rawValue) \(bind(value, &arguments))"
        }
    }

    /// The ORDER BY list for `sort`, with the identifier last so equal keys keep a stable order.
    public func orderBy(_ sort: [FetchSort]) -> String {
        var terms = sort.map { "\(column($0.key)) \($0.ascending ? "ASC" : "DESC")" }
        if !sort.contains(where: { $0.key == .localIdentifier }) { terms.append("\(column(.localIdentifier)) ASC") }
        return terms.joined(separator: ", ")
    }
}

/// What differs between the SQL the stores speak, for `AssetSelect`: placeholders, table names, how
/// a list bound as one JSON array is read back as rows, and where NULLs sort.
public struct SQLDialect: Sendable {
    /// The placeholder for the n-th parameter of a statement (1-based).
    public var placeholder: @Sendable (Int) -> String
    /// Prepended to every table name (`reel_library_` in a database the fleet's queue shares).
    public var tablePrefix: String
    /// A subquery giving one row per string of the JSON array bound at `placeholder`.
    public var jsonTextList: @Sendable (_ placeholder: String) -> String
    /// Whether `ASC` must say `NULLS FIRST` (and `DESC` `NULLS LAST`) to sort as SQLite does, where NULL
    /// is smaller than any value (PostgreSQL's default is the opposite).
    public var explicitNullOrder: Bool

    public init(
        placeholder: @escaping @Sendable (Int) -> String, tablePrefix: String,
        jsonTextList: @escaping @Sendable (String) -> String, explicitNullOrder: Bool
    ) {
        self.placeholder = placeholder
        self.tablePrefix = tablePrefix
        self.jsonTextList = jsonTextList
        self.explicitNullOrder = explicitNullOrder
    }

    /// SQLite (`SQLiteLibraryStore`): `?`, plain table names, `json_each`.
    public static let sqlite = SQLDialect(
        placeholder: { _ in "?" }, tablePrefix: "", jsonTextList: { "SELECT value FROM json_each(\($0))" },
        explicitNullOrder: false)

    /// PostgreSQL (the fleet's database): `$n`, tables prefixed `reel_library_`, `jsonb_array_elements_text`.
    public static let postgres = SQLDialect(
        placeholder: { "$\($0)" }, tablePrefix: "reel_library_",
        jsonTextList: { "SELECT jsonb_array_elements_text(\($0)::jsonb)" }, explicitNullOrder: true)

    /// `ASC` or `DESC`, with NULLs where SQLite puts them.
    func direction(ascending: Bool) -> String {
        switch (ascending, explicitNullOrder) {
        case (true, false): "ASC"
        case (false, false): "DESC"
        case (true, true): "ASC NULLS FIRST"
        case (false, true): "DESC NULLS LAST"
        }
    }
}

/// The asset fetch both stores run, written once over a dialect: the query's scope, PhotoKit's
/// default filters (hidden assets, one asset per burst), the predicate (`SQLRenderer`, bound
/// parameters only), the order and the limit. Both stores' `asset` tables have the same columns.
public enum AssetSelect {
    /// The column of each PhotoKit key in the `asset` table (aliased `a`), from `AssetColumns`.
    public static func column(_ key: FetchKey) -> String { "a." + AssetColumns.column(for: key).name }

    /// Whether `a` is the first of its burst by capture time (undated first), given it has one.
    static func firstOfItsBurst(_ dialect: SQLDialect) -> String {
        """
        a.local_identifier = (SELECT b.local_identifier FROM \(dialect.tablePrefix)asset b \
        WHERE b.burst_identifier = a.burst_identifier ORDER BY b.creation_date \(dialect.direction(ascending: true)), \
        b.local_identifier LIMIT 1)
        """
    }

    /// Whether `a` is shown when bursts are collapsed (PhotoKit's default fetch): it is in no burst, or
    /// it is its burst's representative.
    public static func representsBurstCondition(_ dialect: SQLDialect) -> String {
        "(a.burst_identifier IS NULL OR \(firstOfItsBurst(dialect)))"
    }

    /// The `represents_burst` column every asset read selects: PhotoKit's `representsBurst`, true only
    /// for a burst's representative and false for every asset outside a burst.
    public static func representsBurst(_ dialect: SQLDialect) -> String {
        "(a.burst_identifier IS NOT NULL AND \(firstOfItsBurst(dialect))) AS represents_burst"
    }

    /// The statement for `query`: `SELECT a.*, represents_burst …`, or `SELECT count(*) …` with `count`.
    /// Booleans are bound as 0 or 1 and dates as seconds since 1970, as both stores keep them.
    public static func statement(_ query: AssetQuery, count: Bool, dialect: SQLDialect) throws -> SQLFragment {
        var conditions: [String] = []
        var values: [FetchValue] = []
        func bind(_ value: FetchValue) -> String {
            values.append(value)
            return dialect.placeholder(values.count)
        }
        let table = dialect.tablePrefix + "asset"
        var join = ""
        switch query.scope {
        case .library: break
        case .userAlbum(let identifier):
            join =
                "JOIN \(dialect.tablePrefix)album_asset m ON m.local_identifier = a.local_identifier AND m.album = \(bind(.string(identifier)))"
        case .folder(let folder):
            conditions.append("a.folder = \(bind(.string(folder)))")
        case .identifiers(let identifiers):
            let list = String(decoding: try JSONEncoder().encode(identifiers), as: UTF8.self)
            conditions.append("a.local_identifier IN (\(dialect.jsonTextList(bind(.string(list)))))")
        }
        if !query.includeHiddenAssets { conditions.append("a.is_hidden = 0") }
        if !query.includeAllBurstAssets { conditions.append(representsBurstCondition(dialect)) }
        if let since = query.addedSince {
            conditions.append("a.added_date >= \(bind(.real(since.timeIntervalSince1970)))")
        }
        if let style = query.playbackStyle {
            conditions.append("a.playback_style = \(bind(.integer(Int64(style.rawValue))))")
        }
        let renderer = SQLRenderer(
            column: column, placeholder: dialect.placeholder, firstParameter: values.count + 1)
        if let predicate = query.predicate {
            let fragment = renderer.render(predicate)
            conditions.append(fragment.sql)
            values += fragment.arguments
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        if count {
            return SQLFragment("SELECT count(*) FROM \(table) a \(join) \(whereClause)", values)
        }
        var order = query.sort.map { "\(column($0.key)) \(dialect.direction(ascending: $0.ascending))" }
        if case .userAlbum = query.scope, query.sort.isEmpty { order = ["m.position ASC"] }
        if !query.sort.contains(where: { $0.key == .localIdentifier }) { order.append("a.local_identifier ASC") }
        var sql =
            "SELECT a.*, \(representsBurst(dialect)) FROM \(table) a \(join) \(whereClause) ORDER BY \(order.joined(separator: ", "))"
        if query.limit > 0 { sql += " LIMIT \(bind(.integer(Int64(query.limit))))" }
        return SQLFragment(sql, values)
    }
}
