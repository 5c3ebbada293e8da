/// A four-character code: an ISO-BMFF box type, a brand, a HEIF item type or a handler type.
public struct FourCC: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The four bytes, big-endian (the first character in the top byte), as they sit in a file.
    public let rawValue: UInt32

    /// The code from its big-endian 32-bit value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code from a string of exactly four ASCII characters (`"ftyp"`, `"qt  "`); a shorter one is
    /// padded with spaces, a longer one cut (codes come from source text, not from files).
    public init(_ text: String) {
        var bytes = Array(text.utf8.prefix(4))
        while bytes.count < 4 { bytes.append(0x20) }
        rawValue = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The four bytes as they sit in a file.
    public var bytes: [UInt8] {
        [UInt8(rawValue >> 24), UInt8(rawValue >> 16 & 0xff), UInt8(rawValue >> 8 & 0xff), UInt8(rawValue & 0xff)]
    }

    /// The characters; bytes outside printable ASCII show as `\xNN`, so a hostile code prints safely.
    public var description: String {
        bytes.map { $0 >= 0x20 && $0 < 0x7f ? String(UnicodeScalar($0)) : "\\x" + hex($0) }.joined()
    }

    private func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xf)]])
    }

    /// Whether all four bytes are printable ASCII (every real box type is).
    public var isPrintable: Bool { bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7f } }

    public static func < (lhs: FourCC, rhs: FourCC) -> Bool { lhs.rawValue < rhs.rawValue }
}
