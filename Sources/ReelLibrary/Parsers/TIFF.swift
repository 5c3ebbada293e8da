import Foundation
import ReelBoxes

/// One entry of a TIFF image file directory: its tag, type, count and where its value is.
struct TIFFEntry: Sendable {
    var tag: UInt16
    var type: UInt16
    var count: UInt32
    /// Offset of the value in the TIFF bytes: inline in the entry when it fits in four bytes.
    var valueOffset: Int
}

/// Reads TIFF structures (Exif, GPS, Apple's MakerNote) from bytes in memory, checking every offset
/// and count against the bytes it has: a value that points outside is skipped, never read.
/// Directories hold at most 1,000 entries, chains at most 8 directories, and values at most 64 KB.
struct TIFFReader {
    let bytes: [UInt8]
    let littleEndian: Bool
    /// Offsets in the bytes count from here (0 for Exif's TIFF header; a MakerNote's start for Apple's).
    let origin: Int

    static let maxEntries = 1_000
    static let maxValueBytes = 64 << 10

    /// Reads the byte order mark at `origin` (`II` or `MM`, then 42). Throws when it is neither.
    init(_ bytes: [UInt8], origin: Int = 0) throws(BoxError) {
        var cursor = ByteCursor(bytes)
        try cursor.seek(to: origin)
        let mark = try cursor.u16()
        switch mark {
        case 0x4949: littleEndian = true
        case 0x4D4D: littleEndian = false
        default: throw BoxError(.malformed, at: Int64(origin), "no TIFF byte order mark")
        }
        cursor.littleEndian = littleEndian
        guard try cursor.u16() == 42 else { throw BoxError(.malformed, at: Int64(origin + 2), "no TIFF magic number") }
        self.bytes = bytes
        self.origin = origin
    }

    /// A reader over bytes whose byte order is already known (a MakerNote's IFD without a TIFF header).
    init(_ bytes: [UInt8], littleEndian: Bool, origin: Int) {
        self.bytes = bytes
        self.littleEndian = littleEndian
        self.origin = origin
    }

    /// Offset of the first IFD, from the TIFF header.
    func firstIFDOffset() throws(BoxError) -> Int {
        var cursor = ByteCursor(bytes, littleEndian: littleEndian)
        try cursor.seek(to: origin + 4)
        return Int(try cursor.u32())
    }

    /// The entries of the IFD at `offset` (relative to `origin`), and the offset of the next IFD (0
    /// when none).
    func directory(at offset: Int) throws(BoxError) -> (entries: [TIFFEntry], next: Int) {
        var cursor = ByteCursor(bytes, littleEndian: littleEndian)
        let start = origin + offset
        guard offset >= 0, start >= 0, start < bytes.count else {
            throw BoxError(.outOfBounds, at: Int64(max(0, start)), "an IFD offset \(offset) points outside")
        }
        try cursor.seek(to: start)
        let count = Int(try cursor.u16())
        guard count <= TIFFReader.maxEntries else {
            throw BoxError(.limitExceeded, at: Int64(start), "an IFD declares \(count) entries")
        }
        var entries: [TIFFEntry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let entryStart = cursor.position
            let tag = try cursor.u16()
            let type = try cursor.u16()
            let valueCount = try cursor.u32()
            let size = TIFFReader.typeSize(type) * Int(valueCount)
            let valueOffset: Int
            if size <= 4 && TIFFReader.typeSize(type) > 0 {
                valueOffset = entryStart + 8
                try cursor.skip(4)
            } else {
                valueOffset = origin + Int(try cursor.u32())
            }
            entries.append(TIFFEntry(tag: tag, type: type, count: valueCount, valueOffset: valueOffset))
        }
        let next = cursor.remaining >= 4 ? Int(try cursor.u32()) : 0
        return (entries, next)
    }

    static func typeSize(_ type: UInt16) -> Int {
        switch type {
        case 1, 2, 6, 7: 1
        case 3, 8: 2
        case 4, 9, 11, 13: 4
        case 5, 10, 12: 8
        default: 0
        }
    }

    /// The raw bytes of an entry's value, when they lie inside the bytes and are not too many.
    func valueBytes(_ entry: TIFFEntry) -> [UInt8]? {
        let size = TIFFReader.typeSize(entry.type) * Int(entry.count)
        guard TIFFReader.typeSize(entry.type) > 0, Int(entry.count) <= TIFFReader.maxValueBytes,
            size <= TIFFReader.maxValueBytes, entry.valueOffset >= 0, entry.valueOffset <= bytes.count,
            size <= bytes.count - entry.valueOffset
        else { return nil }
        return Array(bytes[entry.valueOffset..<entry.valueOffset + size])
    }

    /// An ASCII value, cut at its first NUL, trimmed; nil when it points outside.
    func string(_ entry: TIFFEntry) -> String? {
        guard entry.type == 2 || entry.type == 7 || entry.type == 1, let raw = valueBytes(entry) else { return nil }
        let text = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// The integer values of a BYTE, SHORT, LONG (or signed) entry.
    func integers(_ entry: TIFFEntry) -> [Int64] {
        guard let raw = valueBytes(entry) else { return [] }
        var cursor = ByteCursor(raw, littleEndian: littleEndian)
        var values: [Int64] = []
        for _ in 0..<Int(entry.count) {
            do {
                switch entry.type {
                case 1, 7: values.append(Int64(try cursor.u8()))
                case 6: values.append(Int64(Int8(bitPattern: try cursor.u8())))
                case 3: values.append(Int64(try cursor.u16()))
                case 8: values.append(Int64(Int16(bitPattern: try cursor.u16())))
                case 4, 13: values.append(Int64(try cursor.u32()))
                case 9: values.append(Int64(Int32(bitPattern: try cursor.u32())))
                default: return values
                }
            } catch {
                return values
            }
        }
        return values
    }

    /// The values of a RATIONAL or SRATIONAL entry (a zero denominator gives nil for that value).
    func rationals(_ entry: TIFFEntry) -> [Double?] {
        guard entry.type == 5 || entry.type == 10, let raw = valueBytes(entry) else { return [] }
        var cursor = ByteCursor(raw, littleEndian: littleEndian)
        var values: [Double?] = []
        for _ in 0..<Int(entry.count) {
            guard let numerator = try? cursor.u32(), let denominator = try? cursor.u32() else { break }
            if entry.type == 10 {
                let n = Double(Int32(bitPattern: numerator))
                let d = Double(Int32(bitPattern: denominator))
                values.append(d == 0 ? nil : n / d)
            } else {
                values.append(denominator == 0 ? nil : Double(numerator) / Double(denominator))
            }
        }
        return values
    }
}
