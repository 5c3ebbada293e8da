import Foundation

/// Parses the subset of NSPredicate's format that PhotoKit accepts for asset fetches:
/// comparisons (`==`, `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`) of a key with a literal, bit tests
/// (`(mediaSubtypes & 8) != 0`), `IN {…}`, `BETWEEN {low, high}`, `AND`/`&&`, `OR`/`||`, `NOT`/`!`,
/// parentheses, `TRUEPREDICATE`/`FALSEPREDICATE`.
///
/// Keys are exactly PhotoKit's (`FetchKey.allowedNames`); any other name is refused by name, as
/// PhotoKit refuses it. Dates are written as ISO 8601 strings (`creationDate >= "2024-05-01"`,
/// `"2024-05-01T12:00:00+02:00"`; a date without a zone is UTC) or `CAST(seconds, "NSDate")` with
/// seconds since 2001-01-01 (NSPredicate's reference date). Booleans are `TRUE`/`FALSE`/`YES`/`NO`.
/// Input is bounded: 16 KB of text, 64 levels of nesting, 1,000 values in a list.
public enum PredicateParser {
    public static let maxLength = 16 << 10
    public static let maxDepth = 64
    public static let maxListValues = 1_000

    /// The predicate `text` says. Throws `LibraryError` (`.invalidArgument`) naming the problem.
    public static func parse(_ text: String) throws(LibraryError) -> AssetPredicate {
        guard text.utf8.count <= maxLength else {
            throw LibraryError(.invalidArgument, "the predicate is \(text.utf8.count) bytes, over \(maxLength)")
        }
        var parser = Parser(tokens: try tokenize(text))
        let predicate = try parser.orExpression(depth: 0)
        guard parser.isAtEnd else {
            throw LibraryError(.invalidArgument, "unexpected '\(parser.peek?.text ?? "")' in the predicate")
        }
        return predicate
    }

    enum TokenKind: Equatable { case word, number, string, symbol }
    struct Token: Equatable {
        var kind: TokenKind
        var text: String
    }

    static func tokenize(_ text: String) throws(LibraryError) -> [Token] {
        var tokens: [Token] = []
        let scalars = Array(text.unicodeScalars)
        var index = 0
        func isWord(_ c: UnicodeScalar) -> Bool {
            CharacterSet.alphanumerics.contains(c) || c == "_" || c == "$" || c == "."
        }
        while index < scalars.count {
            let c = scalars[index]
            if CharacterSet.whitespacesAndNewlines.contains(c) {
                index += 1
            } else if c == "\"" || c == "'" {
                var value = ""
                index += 1
                var closed = false
                while index < scalars.count {
                    let d = scalars[index]
                    if d == "\\", index + 1 < scalars.count {
                        value.unicodeScalars.append(scalars[index + 1])
                        index += 2
                        continue
                    }
                    if d == c {
                        closed = true
                        index += 1
                        break
                    }
                    value.unicodeScalars.append(d)
                    index += 1
                }
                guard closed else { throw LibraryError(.invalidArgument, "a string in the predicate is not closed") }
                tokens.append(Token(kind: .string, text: value))
            } else if CharacterSet.decimalDigits.contains(c)
                || (c == "-" && index + 1 < scalars.count && CharacterSet.decimalDigits.contains(scalars[index + 1])
                    && (tokens.last.map { $0.kind == .symbol && $0.text != ")" } ?? true))
            {
                var value = String(c)
                index += 1
                while index < scalars.count, isWord(scalars[index]) {
                    value.unicodeScalars.append(scalars[index])
                    index += 1
                }
                tokens.append(Token(kind: .number, text: value))
            } else if isWord(c) {
                var value = ""
                while index < scalars.count, isWord(scalars[index]) {
                    value.unicodeScalars.append(scalars[index])
                    index += 1
                }
                tokens.append(Token(kind: .word, text: value))
            } else {
                let two = index + 1 < scalars.count ? String(c) + String(scalars[index + 1]) : ""
                if ["==", "!=", "<>", "<=", ">=", "=<", "=>", "&&", "||"].contains(two) {
                    tokens.append(Token(kind: .symbol, text: two))
                    index += 2
                } else if "=<>!()&{},".unicodeScalars.contains(c) {
                    tokens.append(Token(kind: .symbol, text: String(c)))
                    index += 1
                } else {
                    throw LibraryError(.invalidArgument, "unexpected character '\(c)' in the predicate")
                }
            }
        }
        return tokens
    }

    struct Parser {
        var tokens: [Token]
        var index = 0

        var isAtEnd: Bool { index >= tokens.count }
        var peek: Token? { index < tokens.count ? tokens[index] : nil }
        func peek(_ offset: Int) -> Token? { index + offset < tokens.count ? tokens[index + offset] : nil }

        mutating func next() throws(LibraryError) -> Token {
            guard let token = peek else { throw LibraryError(.invalidArgument, "the predicate ends too early") }
            index += 1
            return token
        }

        mutating func expect(_ symbol: String) throws(LibraryError) {
            let token = try next()
            guard token.kind == .symbol, token.text == symbol else {
                throw LibraryError(.invalidArgument, "expected '\(symbol)' in the predicate, found '\(token.text)'")
            }
        }

        func isKeyword(_ token: Token?, _ words: String...) -> Bool {
            guard let token, token.kind == .word else { return false }
            return words.contains(token.text.uppercased())
        }

        mutating func orExpression(depth: Int) throws(LibraryError) -> AssetPredicate {
            guard depth < PredicateParser.maxDepth else {
                throw LibraryError(.invalidArgument, "the predicate nests deeper than \(PredicateParser.maxDepth)")
            }
            var terms = [try andExpression(depth: depth)]
            while isKeyword(peek, "OR") || peek == Token(kind: .symbol, text: "||") {
                index += 1
                terms.append(try andExpression(depth: depth))
            }
            return terms.count == 1 ? terms[0] : .or(terms)
        }

        mutating func andExpression(depth: Int) throws(LibraryError) -> AssetPredicate {
            var terms = [try unary(depth: depth)]
            while isKeyword(peek, "AND") || peek == Token(kind: .symbol, text: "&&") {
                index += 1
                terms.append(try unary(depth: depth))
            }
            return terms.count == 1 ? terms[0] : .and(terms)
        }

        mutating func unary(depth: Int) throws(LibraryError) -> AssetPredicate {
            guard depth < PredicateParser.maxDepth else {
                throw LibraryError(.invalidArgument, "the predicate nests deeper than \(PredicateParser.maxDepth)")
            }
            if isKeyword(peek, "NOT") || peek == Token(kind: .symbol, text: "!") {
                index += 1
                return .not(try unary(depth: depth + 1))
            }
            if isKeyword(peek, "TRUEPREDICATE") {
                index += 1
                return .constant(true)
            }
            if isKeyword(peek, "FALSEPREDICATE") {
                index += 1
                return .constant(false)
            }
            // `(key & N) op value` is a comparison; any other parenthesis groups a predicate.
            if peek == Token(kind: .symbol, text: "("), peek(1)?.kind == .word,
                peek(2) == Token(kind: .symbol, text: "&")
            {
                return try comparison()
            }
            if peek == Token(kind: .symbol, text: "(") {
                index += 1
                let inner = try orExpression(depth: depth + 1)
                try expect(")")
                return inner
            }
            return try comparison()
        }

        mutating func key() throws(LibraryError) -> FetchKey {
            let token = try next()
            guard token.kind == .word else {
                throw LibraryError(.invalidArgument, "expected a key in the predicate, found '\(token.text)'")
            }
            guard let key = FetchKey(name: token.text) else {
                throw LibraryError(
                    .invalidArgument,
                    "'\(token.text)' is not a key PhotoKit allows in an asset predicate (allowed: \(FetchKey.allowedNames.joined(separator: ", ")))"
                )
            }
            return key
        }

        mutating func operand() throws(LibraryError) -> FetchOperand {
            var parenthesised = false
            if peek == Token(kind: .symbol, text: "(") {
                index += 1
                parenthesised = true
            }
            let key = try key()
            var operand = FetchOperand.key(key)
            if peek == Token(kind: .symbol, text: "&") {
                index += 1
                guard key == .mediaSubtypes || key == .mediaType else {
                    throw LibraryError(.invalidArgument, "'&' tests bits of mediaSubtypes, not \(key.rawValue)")
                }
                let mask = try next()
                guard mask.kind == .number, let value = PredicateParser.integer(mask.text), value >= 0 else {
                    throw LibraryError(.invalidArgument, "'&' needs a non-negative whole number, not '\(mask.text)'")
                }
                operand = .bitAnd(key, UInt64(value))
            }
            if parenthesised { try expect(")") }
            return operand
        }

        mutating func comparison() throws(LibraryError) -> AssetPredicate {
            let operand = try operand()
            let key = operand.key
            if isKeyword(peek, "IN") {
                index += 1
                guard case .key = operand else {
                    throw LibraryError(.invalidArgument, "IN takes a key, not a bit test")
                }
                try expect("{")
                var values: [FetchValue] = []
                if peek != Token(kind: .symbol, text: "}") {
                    repeat {
                        values.append(try value(for: key))
                        guard values.count <= PredicateParser.maxListValues else {
                            throw LibraryError(
                                .invalidArgument, "IN lists more than \(PredicateParser.maxListValues) values")
                        }
                    } while try consume(",")
                }
                try expect("}")
                return .isIn(key, values)
            }
            if isKeyword(peek, "BETWEEN") {
                index += 1
                guard case .key = operand else {
                    throw LibraryError(.invalidArgument, "BETWEEN takes a key, not a bit test")
                }
                try expect("{")
                let low = try value(for: key)
                try expect(",")
                let high = try value(for: key)
                try expect("}")
                return .between(key, low, high)
            }
            let symbol = try next()
            let op: ComparisonOperator
            switch (symbol.kind, symbol.text) {
            case (.symbol, "=="), (.symbol, "="): op = .equal
            case (.symbol, "!="), (.symbol, "<>"): op = .notEqual
            case (.symbol, "<"): op = .less
            case (.symbol, "<="), (.symbol, "=<"): op = .lessOrEqual
            case (.symbol, ">"): op = .greater
            case (.symbol, ">="), (.symbol, "=>"): op = .greaterOrEqual
            default:
                throw LibraryError(
                    .invalidArgument,
                    "'\(symbol.text)' is not an operator Reel accepts in a predicate (==, !=, <, <=, >, >=, IN, BETWEEN)"
                )
            }
            if case .bitAnd = operand {
                let value = try next()
                guard value.kind == .number, let number = PredicateParser.integer(value.text) else {
                    throw LibraryError(.invalidArgument, "a bit test compares with a whole number, not '\(value.text)'")
                }
                return .compare(operand, op, .integer(number))
            }
            return .compare(operand, op, try value(for: key))
        }

        mutating func consume(_ symbol: String) throws(LibraryError) -> Bool {
            guard peek == Token(kind: .symbol, text: symbol) else { return false }
            index += 1
            return true
        }

        mutating func value(for key: FetchKey) throws(LibraryError) -> FetchValue {
            let token = try next()
            if isKeyword(token, "NIL", "NULL") { return .null }
            if isKeyword(token, "CAST") {
                try expect("(")
                let number = try next()
                try expect(",")
                let type = try next()
                try expect(")")
                guard key.isDate, type.kind == .string, type.text == "NSDate", number.kind == .number,
                    let seconds = Double(number.text)
                else {
                    throw LibraryError(.invalidArgument, "CAST(seconds, \"NSDate\") is the only cast, for a date key")
                }
                return .date(Date(timeIntervalSinceReferenceDate: seconds))
            }
            // The literal a key takes is its column's type (`AssetColumns`).
            switch AssetColumns.column(for: key).type {
            case .date:
                guard token.kind == .string, let date = PredicateParser.date(token.text) else {
                    throw LibraryError(
                        .invalidArgument,
                        "\(key.rawValue) compares with a date: \"YYYY-MM-DD\", an ISO 8601 time or CAST(seconds, \"NSDate\"), not '\(token.text)'"
                    )
                }
                return .date(date)
            case .flag:
                if isKeyword(token, "TRUE", "YES") || token.text == "1" { return .bool(true) }
                if isKeyword(token, "FALSE", "NO") || token.text == "0" { return .bool(false) }
                throw LibraryError(.invalidArgument, "\(key.rawValue) compares with TRUE or FALSE, not '\(token.text)'")
            case .text:
                guard token.kind == .string else {
                    throw LibraryError(
                        .invalidArgument, "\(key.rawValue) compares with a quoted string, not '\(token.text)'")
                }
                return .string(token.text)
            case .real:
                guard token.kind == .number, let number = Double(token.text), number.isFinite else {
                    throw LibraryError(
                        .invalidArgument,
                        "\(key.rawValue) compares with a number\(key == .duration ? " of seconds" : ""), not '\(token.text)'"
                    )
                }
                return .real(number)
            case .integer:
                guard token.kind == .number, let number = PredicateParser.integer(token.text) else {
                    throw LibraryError(
                        .invalidArgument, "\(key.rawValue) compares with a whole number, not '\(token.text)'")
                }
                return .integer(number)
            }
        }
    }

    static func integer(_ text: String) -> Int64? {
        if text.hasPrefix("0x") || text.hasPrefix("0X") { return Int64(text.dropFirst(2), radix: 16) }
        return Int64(text)
    }

    /// An ISO 8601 date or time; a date alone, or a time without a zone, is UTC.
    static func date(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        for format in [
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXXXX", "yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSS",
            "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd",
        ] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
