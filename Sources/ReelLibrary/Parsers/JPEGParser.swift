import ReelBoxes

/// What the header segments of a JPEG hold: its frame size, the Exif block and the XMP packets.
struct JPEGHeader: Sendable {
    var width: Int?
    var height: Int?
    var exif: [UInt8]?
    /// The standard XMP packet, and the extended one reassembled (when its parts fit).
    var xmp: [UInt8]?
    var extendedXMP: [UInt8]?
    /// Where the segments end: the start-of-scan marker's offset (image data follows).
    var scanOffset: Int64?
    var warnings: [String] = []
}

/// Walks a JPEG's marker segments from SOI to SOS, reading APP1 (Exif, XMP, Extended XMP) and the
/// SOF frame size. Each segment's length is checked against the file; at most 1,000 segments and
/// 4 MB of extended XMP are read.
enum JPEGParser {
    static let maxSegments = 1_000
    static let maxExtendedXMP = 4 << 20

    static let exifSignature: [UInt8] = Array("Exif".utf8) + [0, 0]
    static let xmpSignature: [UInt8] = Array("http://ns.adobe.com/xap/1.0/".utf8) + [0]
    static let extendedSignature: [UInt8] = Array("http://ns.adobe.com/xmp/extension/".utf8) + [0]

    static func parse(_ source: any ByteSource) throws(BoxError) -> JPEGHeader {
        var header = JPEGHeader()
        let head = try source.read(at: 0, length: Int(min(2, source.count)))
        guard head == [0xFF, 0xD8] else { throw BoxError(.malformed, at: 0, "not a JPEG (no SOI marker)") }
        var offset: Int64 = 2
        var extendedParts: [(offset: Int, bytes: [UInt8])] = []
        var extendedLength = 0
        for _ in 0..<maxSegments {
            guard offset + 4 <= source.count else {
                header.warnings.append("JPEG: the file ends inside its header segments (truncated)")
                break
            }
            var cursor = ByteCursor(try source.read(at: offset, length: 4), base: offset)
            let marker0 = try cursor.u8()
            let marker = try cursor.u8()
            guard marker0 == 0xFF else {
                header.warnings.append("JPEG: no marker at byte \(offset)")
                break
            }
            // Fill bytes (0xFF 0xFF…) may precede a marker.
            if marker == 0xFF {
                offset += 1
                continue
            }
            if marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01 {
                offset += 2
                continue
            }
            if marker == 0xD9 { break }
            if marker == 0xDA {
                header.scanOffset = offset
                break
            }
            let length = Int(try cursor.u16())
            guard length >= 2 else { throw BoxError(.malformed, at: offset, "a JPEG segment of length \(length)") }
            let payloadStart = offset + 4
            let payloadLength = length - 2
            guard payloadStart + Int64(payloadLength) <= source.count else {
                header.warnings.append("JPEG: segment 0x\(String(marker, radix: 16)) runs past the end (truncated)")
                break
            }
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                var frame = ByteCursor(
                    try source.read(at: payloadStart, length: min(payloadLength, 8)), base: payloadStart)
                _ = try frame.u8()
                header.height = Int(try frame.u16())
                header.width = Int(try frame.u16())
            case 0xE1:
                let payload = try source.read(at: payloadStart, length: payloadLength)
                if payload.starts(with: exifSignature), header.exif == nil {
                    header.exif = Array(payload.dropFirst(exifSignature.count))
                } else if payload.starts(with: xmpSignature), header.xmp == nil {
                    header.xmp = Array(payload.dropFirst(xmpSignature.count))
                } else if payload.starts(with: extendedSignature) {
                    // GUID (32), full length (4), this part's offset (4), then the part.
                    var part = ByteCursor(payload, base: payloadStart)
                    try part.skip(extendedSignature.count + 32)
                    let full = Int(try part.u32())
                    let partOffset = Int(try part.u32())
                    let bytes = try part.bytes(part.remaining)
                    if full <= maxExtendedXMP, partOffset <= full, bytes.count <= full - partOffset {
                        extendedLength = full
                        extendedParts.append((partOffset, bytes))
                    } else {
                        header.warnings.append("XMP: an extended part claims \(full) bytes; ignored")
                    }
                }
            default:
                break
            }
            offset = payloadStart + Int64(payloadLength)
        }
        if !extendedParts.isEmpty, extendedLength > 0 {
            var whole = [UInt8](repeating: 0, count: extendedLength)
            var covered = 0
            // Parts whose declared full length differs from the last one's are not trusted to fit.
            for part in extendedParts where part.offset + part.bytes.count <= extendedLength {
                whole.replaceSubrange(part.offset..<part.offset + part.bytes.count, with: part.bytes)
                covered += part.bytes.count
            }
            if covered >= extendedLength {
                header.extendedXMP = whole
            } else {
                header.warnings.append("XMP: the extended packet is incomplete (\(covered) of \(extendedLength) bytes)")
            }
        }
        return header
    }
}
