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
