/// Reads numbers and strings from bytes in memory, checking every read against the end: a read past
/// it throws `outOfBounds` instead of trapping. Offsets in errors are file offsets (`base` + position).
public struct ByteCursor: Sendable {
    public let bytes: [UInt8]
    /// Where the next read starts, from the start of `bytes`.
    public var position: Int
    /// The file offset of `bytes[0]`, for error messages.
    public let base: Int64
    /// Whether multi-byte numbers are little-endian (TIFF's `II`); big-endian otherwise.
    public var littleEndian: Bool

    public init(_ bytes: [UInt8], base: Int64 = 0, littleEndian: Bool = false) {
        self.bytes = bytes
        self.position = 0
        self.base = base
        self.littleEndian = littleEndian
    }

    /// Bytes left after `position`.
    public var remaining: Int { max(0, bytes.count - position) }
    public var isAtEnd: Bool { position >= bytes.count }

    @inlinable
    func need(_ count: Int) throws(BoxError) {
        guard count >= 0, position >= 0, position <= bytes.count, count <= bytes.count - position else {
            throw BoxError(
                .outOfBounds, at: base + Int64(max(0, position)),
                "\(count) bytes needed, \(max(0, bytes.count - position)) left")
        }
    }

    /// Moves to `offset` (from the start of `bytes`); throws when it lies past the end.
    public mutating func seek(to offset: Int) throws(BoxError) {
        guard offset >= 0, offset <= bytes.count else {
            throw BoxError(
                .outOfBounds, at: base + Int64(max(0, offset)), "offset \(offset) is past the end \(bytes.count)")
        }
        position = offset
    }

    public mutating func skip(_ count: Int) throws(BoxError) {
        try need(count)
        position += count
    }

    public mutating func u8() throws(BoxError) -> UInt8 {
        try need(1)
        defer { position += 1 }
        return bytes[position]
    }

    public mutating func u16() throws(BoxError) -> UInt16 {
        try need(2)
        defer { position += 2 }
        let a = UInt16(bytes[position])
        let b = UInt16(bytes[position + 1])
        return littleEndian ? b << 8 | a : a << 8 | b
    }

    public mutating func u24() throws(BoxError) -> UInt32 {
        try need(3)
        defer { position += 3 }
        let a = UInt32(bytes[position])
        let b = UInt32(bytes[position + 1])
        let c = UInt32(bytes[position + 2])
        return littleEndian ? c << 16 | b << 8 | a : a << 16 | b << 8 | c
    }

    public mutating func u32() throws(BoxError) -> UInt32 {
        try need(4)
        defer { position += 4 }
        var value: UInt32 = 0
        for index in 0..<4 {
            let byte = UInt32(bytes[position + (littleEndian ? 3 - index : index)])
            value = value << 8 | byte
        }
        return value
    }

    public mutating func u64() throws(BoxError) -> UInt64 {
        try need(8)
        defer { position += 8 }
        var value: UInt64 = 0
        for index in 0..<8 {
            let byte = UInt64(bytes[position + (littleEndian ? 7 - index : index)])
            value = value << 8 | byte
        }
        return value
    }

    /// An unsigned number of `size` bytes (0, 4 or 8, as `iloc` declares them; 0 reads as 0).
    public mutating func unsigned(size: Int) throws(BoxError) -> UInt64 {
        switch size {
        case 0: return 0
        case 1: return UInt64(try u8())
        case 2: return UInt64(try u16())
        case 4: return UInt64(try u32())
        case 8: return try u64()
        default: throw BoxError(.malformed, at: base + Int64(position), "a field size of \(size) bytes")
        }
    }

    public mutating func fourCC() throws(BoxError) -> FourCC {
        try need(4)
        let code = FourCC(rawValue: try u32BigEndian())
        return code
    }

    private mutating func u32BigEndian() throws(BoxError) -> UInt32 {
        let saved = littleEndian
        littleEndian = false
        defer { littleEndian = saved }
        return try u32()
    }

    public mutating func bytes(_ count: Int) throws(BoxError) -> [UInt8] {
        try need(count)
        defer { position += count }
        return Array(bytes[position..<position + count])
    }

    /// A NUL-terminated string of at most `maxLength` bytes (the NUL is consumed; a string running
    /// to the end without one is taken whole). Invalid UTF-8 is repaired, never trusted.
    public mutating func cString(maxLength: Int = 4096) throws(BoxError) -> String {
        try need(0)
        let end = min(bytes.count, position + maxLength)
        var index = position
        while index < end, bytes[index] != 0 { index += 1 }
        let text = String(decoding: bytes[position..<index], as: UTF8.self)
        position = index < bytes.count && bytes[index] == 0 ? index + 1 : index
        return text
    }
}
