/// One ISO-BMFF box as it sits in a file: where it starts, how long its header is, and the range
/// its payload occupies. Nothing is read beyond the header until asked.
public struct Box: Sendable, Hashable, CustomStringConvertible {
    /// The box's four-character type (`ftyp`, `moov`, `meta`, `mpvd`).
    public let type: FourCC
    /// File offset of the first byte of the box (its size field).
    public let offset: Int64
    /// Header length: 8, 16 with a 64-bit size, plus 16 for a `uuid` box's extended type.
    public let headerSize: Int
    /// The whole box, header included, as the file declares it (checked to fit its parent).
    public let size: Int64
    /// The extended type of a `uuid` box.
    public let userType: [UInt8]?
    /// Whether the header used the 64-bit `largesize` form (size field 1).
    public let usesLargeSize: Bool
    /// Whether the size field was 0 ("to the end of the enclosing range").
    public let extendsToEnd: Bool

    public init(
        type: FourCC, offset: Int64, headerSize: Int, size: Int64, userType: [UInt8]? = nil,
        usesLargeSize: Bool = false, extendsToEnd: Bool = false
    ) {
        self.type = type
        self.offset = offset
        self.headerSize = headerSize
        self.size = size
        self.userType = userType
        self.usesLargeSize = usesLargeSize
        self.extendsToEnd = extendsToEnd
    }

    /// Where the payload (everything after the header) lies in the file.
    public var payload: Range<Int64> { (offset + Int64(headerSize))..<(offset + size) }
    /// The whole box in the file.
    public var range: Range<Int64> { offset..<(offset + size) }
    public var payloadSize: Int64 { size - Int64(headerSize) }

    public var description: String { "\(type)@\(offset)+\(size)" }
}

/// A full box's version and flags (ISO/IEC 14496-12 §4.2: one byte, then 24 bits).
public struct FullBoxHeader: Sendable, Hashable {
    public let version: UInt8
    public let flags: UInt32
    public init(version: UInt8, flags: UInt32) {
        self.version = version
        self.flags = flags
    }
}
