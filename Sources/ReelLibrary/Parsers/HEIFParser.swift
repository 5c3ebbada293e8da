import ReelBoxes

/// What a HEIF/HEIC file's `meta` box says about its primary image, and where its Exif and XMP
/// items are; plus a Samsung `mpvd` box (a Motion Photo's MP4) when there is one.
struct HEIFHeader: Sendable {
    var majorBrand: FourCC?
    var compatibleBrands: [FourCC] = []
    /// Size as displayed (`ispe` with `irot` applied).
    var width: Int?
    var height: Int?
    /// Counter-clockwise quarter turns from `irot` × 90.
    var rotation = 0
    var exif: [UInt8]?
    var xmp: [UInt8]?
    /// A top-level `mpvd` box (its payload is the Motion Photo's MP4).
    var mpvd: Box?
    var warnings: [String] = []
}

/// Reads HEIF's item structure with ReelBoxes: `meta` (full box) → `pitm`, `iinf`/`infe`, `iloc`
/// (versions 0–2; construction methods 0 and 1), `iprp`/`ipco` (`ispe`, `irot`) and `ipma`. Every
/// count is checked against the bytes that hold it; items, extents and properties are capped.
enum HEIFParser {
    static let maxItems = 10_000
    static let maxItemBytes = 4 << 20
    static let imageBrands: Set<FourCC> = [
        "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "avif", "avis", "mif2",
    ]

    typealias Location = ItemLocation

    static func parse(_ source: any ByteSource) throws(BoxError) -> HEIFHeader {
        let reader = BoxReader(source)
        var header = HEIFHeader()
        let (top, topError) = reader.boxesLeniently(in: reader.fileRange)
        if let topError { header.warnings.append("HEIF: \(topError.message) (truncated?)") }
        guard let ftyp = top.first, ftyp.type == "ftyp" else {
            throw BoxError(.malformed, at: 0, "not an ISO-BMFF file (no ftyp first)")
        }
        var brands = try reader.cursor(of: ftyp, limit: 4096)
        header.majorBrand = try brands.fourCC()
        try brands.skip(4)
        while brands.remaining >= 4 { header.compatibleBrands.append(try brands.fourCC()) }
        if let mpvd = top.first(where: { $0.type == "mpvd" }) { header.mpvd = mpvd }
        guard let meta = top.first(where: { $0.type == "meta" }) else {
            header.warnings.append("HEIF: no meta box")
            return header
        }
        let children = try reader.children(of: meta)
        var primary: UInt32?
        var types: [UInt32: (type: FourCC, contentType: String?)] = [:]
        var locations: [UInt32: Location] = [:]
        var properties: [Box] = []
        var associations: [UInt32: [Int]] = [:]
        var idat: Box?
        for box in children {
            switch box.type {
            case "pitm":
                var cursor = try reader.cursor(of: box, limit: 64)
                let version = try cursor.u8()
                try cursor.skip(3)
                primary = version == 0 ? UInt32(try cursor.u16()) : try cursor.u32()
            case "iinf":
                types = try itemInfo(reader, box)
            case "iloc":
                locations = try reader.itemLocations(of: box)
            case "iprp":
                if let ipco = try reader.child("ipco", of: box) {
                    properties = try reader.children(of: ipco)
                }
                for ipma in try reader.children(of: box) where ipma.type == "ipma" {
                    associations.merge(try propertyAssociations(reader, ipma)) { $0 + $1 }
                }
            case "idat":
                idat = box
            default: break
            }
        }
        if let primary {
            for index in associations[primary] ?? [] where index >= 1 && index <= properties.count {
                let property = properties[index - 1]
                switch property.type {
                case "ispe":
                    var cursor = try reader.cursor(of: property, limit: 64)
                    try cursor.skip(4)
                    header.width = Int(try cursor.u32())
                    header.height = Int(try cursor.u32())
                case "irot":
                    var cursor = try reader.cursor(of: property, limit: 16)
                    header.rotation = Int(try cursor.u8() & 0x03) * 90
                default: break
                }
            }
            if header.rotation == 90 || header.rotation == 270, let w = header.width, let h = header.height {
                header.width = h
                header.height = w
            }
        }
        for (id, info) in types.sorted(by: { $0.key < $1.key }) {
            guard let location = locations[id] else { continue }
            if info.type == "Exif", header.exif == nil {
                do throws(BoxError) {
                    let blob = try itemBytes(reader, location, idat: idat)
                    // The Exif item starts with a 4-byte offset to the TIFF header.
                    var cursor = ByteCursor(blob)
                    let skip = Int(try cursor.u32())
                    guard skip <= blob.count - 4 else {
                        throw BoxError(.outOfBounds, at: 0, "the Exif item's TIFF offset \(skip) points outside it")
                    }
                    header.exif = Array(blob[(4 + skip)...])
                } catch {
                    header.warnings.append("HEIF Exif item: \(error.message)")
                }
            } else if info.type == "mime", info.contentType == "application/rdf+xml", header.xmp == nil {
                do throws(BoxError) {
                    header.xmp = try itemBytes(reader, location, idat: idat)
                } catch {
                    header.warnings.append("HEIF XMP item: \(error.message)")
                }
            }
        }
        return header
    }

    static func itemInfo(_ reader: BoxReader, _ box: Box) throws(BoxError) -> [UInt32: (FourCC, String?)] {
        let full = try reader.fullBoxHeader(of: box)
        var cursor = ByteCursor(
            try reader.source.read(at: box.payload.lowerBound, length: Int(min(box.payloadSize, 8))))
        try cursor.skip(4)
        let count = full.version == 0 ? Int(try cursor.u16()) : Int(try cursor.u32())
        guard count <= maxItems else { throw BoxError(.limitExceeded, at: box.offset, "iinf declares \(count) items") }
        let start = box.payload.lowerBound + Int64(cursor.position)
        var result: [UInt32: (FourCC, String?)] = [:]
        for infe in try reader.boxes(in: start..<box.payload.upperBound).prefix(count) where infe.type == "infe" {
            var entry = try reader.cursor(of: infe, limit: 4096)
            let version = try entry.u8()
            try entry.skip(3)
            guard version >= 2 else { continue }
            let id = version == 2 ? UInt32(try entry.u16()) : try entry.u32()
            try entry.skip(2)
            let type = try entry.fourCC()
            _ = try entry.cString()
            var contentType: String?
            if type == "mime", !entry.isAtEnd { contentType = try entry.cString() }
            result[id] = (type, contentType)
        }
        return result
    }

    static func propertyAssociations(_ reader: BoxReader, _ box: Box) throws(BoxError) -> [UInt32: [Int]] {
        var cursor = try reader.cursor(of: box, limit: 4 << 20)
        let version = try cursor.u8()
        let flags = try cursor.u24()
        let count = Int(try cursor.u32())
        guard count <= maxItems else { throw BoxError(.limitExceeded, at: box.offset, "ipma declares \(count) items") }
        var result: [UInt32: [Int]] = [:]
        for _ in 0..<count {
            let id = version < 1 ? UInt32(try cursor.u16()) : try cursor.u32()
            let associations = Int(try cursor.u8())
            var indices: [Int] = []
            for _ in 0..<associations {
                if flags & 1 != 0 {
                    indices.append(Int(try cursor.u16() & 0x7fff))
                } else {
                    indices.append(Int(try cursor.u8() & 0x7f))
                }
            }
            result[id] = indices
        }
        return result
    }

    /// An item's bytes, its extents joined (at most `maxItemBytes`), each checked against the file
    /// (construction method 0) or the `idat` box (method 1).
    static func itemBytes(_ reader: BoxReader, _ location: Location, idat: Box?) throws(BoxError) -> [UInt8] {
        let range: Range<Int64>
        switch location.constructionMethod {
        case 0: range = reader.fileRange
        case 1:
            guard let idat else { throw BoxError(.malformed, at: 0, "an item in idat, but no idat box") }
            range = idat.payload
        default:
            throw BoxError(.malformed, at: 0, "item construction method \(location.constructionMethod)")
        }
        var bytes: [UInt8] = []
        for extent in location.extents {
            let (start, overflow) = location.baseOffset.addingReportingOverflow(extent.offset)
            guard !overflow, start <= UInt64(Int64.max), extent.length <= UInt64(maxItemBytes) else {
                throw BoxError(
                    .outOfBounds, at: 0, "an item extent at \(extent.offset) + \(extent.length) is out of range")
            }
            var length = Int64(extent.length)
            let (absolute, beyond) = range.lowerBound.addingReportingOverflow(Int64(start))
            guard !beyond else { throw BoxError(.outOfBounds, at: 0, "an item extent at \(start) is out of range") }
            // Length 0 means "to the end of the source" (ISO/IEC 23008-12).
            if length == 0 { length = range.upperBound - absolute }
            guard bytes.count + Int(max(0, length)) <= maxItemBytes else {
                throw BoxError(.limitExceeded, at: absolute, "an item of more than \(maxItemBytes) bytes")
            }
            try reader.source.check(absolute, length, inside: range)
            bytes += try reader.source.read(at: absolute, length: Int(length))
        }
        return bytes
    }
}
