import ReelBoxes

/// What a PNG's chunks before its image data say: size, animation (`acTL`), Exif (`eXIf`) and XMP
/// (`iTXt` keyword `XML:com.adobe.xmp`). At most 10,000 chunks; chunk lengths are checked.
struct PNGHeader: Sendable {
    var width: Int?
    var height: Int?
    var isAnimated = false
    var exif: [UInt8]?
    var xmp: [UInt8]?
}

enum PNGParser {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let maxChunks = 10_000
    static let maxMetadataChunk = 1 << 20

    static func parse(_ source: any ByteSource) throws(BoxError) -> PNGHeader {
        guard source.count >= 8, try source.read(at: 0, length: 8) == signature else {
            throw BoxError(.malformed, at: 0, "not a PNG (no signature)")
        }
        var header = PNGHeader()
        var offset: Int64 = 8
        for _ in 0..<maxChunks {
            guard offset + 8 <= source.count else { break }
            var cursor = ByteCursor(try source.read(at: offset, length: 8), base: offset)
            let length = Int64(try cursor.u32())
            let type = try cursor.fourCC()
            let data = offset + 8
            guard length <= source.count - data else {
                throw BoxError(.outOfBounds, at: offset, "PNG chunk '\(type)' runs past the end (truncated)")
            }
            switch type {
            case "IHDR":
                var ihdr = ByteCursor(try source.read(at: data, length: Int(min(length, 8))), base: data)
                header.width = Int(try ihdr.u32())
                header.height = Int(try ihdr.u32())
            case "acTL": header.isAnimated = true
            case "eXIf" where length <= maxMetadataChunk: header.exif = try source.read(at: data, length: Int(length))
            case "iTXt" where length <= maxMetadataChunk:
                let chunk = try source.read(at: data, length: Int(length))
                let keyword = Array("XML:com.adobe.xmp".utf8) + [0]
                // keyword, NUL, compression flag, method, language NUL, translated keyword NUL, text.
                if chunk.starts(with: keyword), chunk.count > keyword.count + 2, chunk[keyword.count] == 0 {
                    var rest = chunk.dropFirst(keyword.count + 2)
                    for _ in 0..<2 {
                        guard let nul = rest.firstIndex(of: 0) else { break }
                        rest = rest[(nul + 1)...]
                    }
                    header.xmp = Array(rest)
                }
            case "IDAT", "IEND":
                return header
            default: break
            }
            offset = data + length + 4
        }
        return header
    }
}

/// A GIF's logical screen size and whether it holds more than one frame. Walks blocks and their
/// sub-blocks up to the second image descriptor (every length byte checked; at most 1,000,000
/// blocks).
struct GIFHeader: Sendable {
    var width: Int
    var height: Int
    var isAnimated: Bool
}

enum GIFParser {
    static func parse(_ source: any ByteSource) throws(BoxError) -> GIFHeader {
        guard source.count >= 13 else { throw BoxError(.outOfBounds, at: 0, "a GIF shorter than its header") }
        var cursor = ByteCursor(try source.read(at: 0, length: 13), littleEndian: true)
        let magic = try cursor.bytes(6)
        guard magic == Array("GIF87a".utf8) || magic == Array("GIF89a".utf8) else {
            throw BoxError(.malformed, at: 0, "not a GIF")
        }
        let width = Int(try cursor.u16())
        let height = Int(try cursor.u16())
        let flags = try cursor.u8()
        var offset: Int64 = 13
        if flags & 0x80 != 0 { offset += 3 << (Int64(flags & 0x07) + 1) }
        var frames = 0
        var reader = BufferedReader(source: source)
        for _ in 0..<1_000_000 {
            guard let introducer = try reader.byte(at: offset) else { break }
            switch introducer {
            case 0x2C:
                frames += 1
                if frames > 1 { return GIFHeader(width: width, height: height, isAnimated: true) }
                guard let packed = try reader.byte(at: offset + 9) else { break }
                offset += 10
                if packed & 0x80 != 0 { offset += 3 << (Int64(packed & 0x07) + 1) }
                offset += 1  // LZW minimum code size
                offset = try skipSubBlocks(&reader, from: offset)
            case 0x21:
                offset = try skipSubBlocks(&reader, from: offset + 2)
            default:
                return GIFHeader(width: width, height: height, isAnimated: false)
            }
        }
        return GIFHeader(width: width, height: height, isAnimated: frames > 1)
    }

    /// Past a chain of sub-blocks (length byte, then that many bytes; 0 ends it).
    private static func skipSubBlocks(_ reader: inout BufferedReader, from start: Int64) throws(BoxError) -> Int64 {
        var offset = start
        while let length = try reader.byte(at: offset) {
            offset += 1
            if length == 0 { return offset }
            offset += Int64(length)
        }
        return offset
    }
}

/// Single bytes from a source through a 64 KB window, for formats walked a byte at a time.
struct BufferedReader {
    let source: any ByteSource
    private var window: [UInt8] = []
    private var start: Int64 = 0

    init(source: any ByteSource) { self.source = source }

    /// The byte at `offset`, or nil past the end.
    mutating func byte(at offset: Int64) throws(BoxError) -> UInt8? {
        guard offset >= 0, offset < source.count else { return nil }
        if offset < start || offset >= start + Int64(window.count) {
            start = offset
            window = try source.read(at: offset, length: Int(min(Int64(64 << 10), source.count - offset)))
        }
        return window[Int(offset - start)]
    }
}
