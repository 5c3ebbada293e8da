/// Walks the boxes of an ISO-BMFF file (MP4, QuickTime, HEIF) over any `ByteSource`, checking every
/// size, offset and count against the range that holds it.
///
/// A size of 1 means a 64-bit size follows; a size of 0 means "to the end of the enclosing range"
/// (ISO/IEC 14496-12 allows it for the last top-level box; it is accepted at any level and clipped
/// to the parent). A box whose declared size runs past its parent, or is smaller than its own header,
/// throws `outOfBounds`/`malformed`; the walk never reads outside the range it was given. At most
/// `maxBoxes` boxes are listed from one range and paths nest at most `maxDepth` deep, so a hostile
/// file cannot make the reader loop or recurse without bound.
public struct BoxReader: Sendable {
    public let source: any ByteSource
    /// Most boxes listed from one range (100,000: a real moov has a few hundred).
    public var maxBoxes: Int
    /// Deepest nesting a path may reach.
    public var maxDepth: Int

    public init(_ source: any ByteSource, maxBoxes: Int = 100_000, maxDepth: Int = 32) {
        self.source = source
        self.maxBoxes = maxBoxes
        self.maxDepth = maxDepth
    }

    /// The whole source as a range.
    public var fileRange: Range<Int64> { 0..<source.count }

    /// Reads the header of the box at `offset`, which must lie inside `range`.
    public func header(at offset: Int64, in range: Range<Int64>) throws(BoxError) -> Box {
        try source.check(offset, 8, inside: range)
        let available = min(32, range.upperBound - offset)
        var cursor = ByteCursor(try source.read(at: offset, length: Int(available)), base: offset)
        let size32 = try cursor.u32()
        let type = try cursor.fourCC()
        var headerSize = 8
        var size: Int64
        var large = false
        var toEnd = false
        switch size32 {
        case 1:
            let size64 = try cursor.u64()
            guard size64 <= UInt64(Int64.max) else {
                throw BoxError(.outOfBounds, at: offset, "box '\(type)' declares \(size64) bytes")
            }
            size = Int64(size64)
            headerSize = 16
            large = true
        case 0:
            size = range.upperBound - offset
            toEnd = true
        default:
            size = Int64(size32)
        }
        var userType: [UInt8]?
        if type == "uuid" {
            userType = try cursor.bytes(16)
            headerSize += 16
        }
        guard size >= Int64(headerSize) else {
            throw BoxError(.malformed, at: offset, "box '\(type)' declares \(size) bytes, less than its header")
        }
        guard size <= range.upperBound - offset else {
            throw BoxError(
                .outOfBounds, at: offset,
                "box '\(type)' declares \(size) bytes but only \(range.upperBound - offset) remain")
        }
        return Box(
            type: type, offset: offset, headerSize: headerSize, size: size, userType: userType,
            usesLargeSize: large, extendsToEnd: toEnd)
    }

    /// The boxes one after another in `range` (a file, or a container's children range). Stops with
    /// an error at the first box that does not fit; see `boxesLeniently` for the ones before it.
    public func boxes(in range: Range<Int64>) throws(BoxError) -> [Box] {
        var found: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            // Fewer than 8 bytes left: padding some writers leave (a zero-filled tail), not a box.
            if range.upperBound - offset < 8 { break }
            guard found.count < maxBoxes else {
                throw BoxError(.limitExceeded, at: offset, "more than \(maxBoxes) boxes in one range")
            }
            let box = try header(at: offset, in: range)
            found.append(box)
            offset += box.size
        }
        return found
    }

    /// The boxes of `range` up to the first that does not fit, and the error that stopped the walk (a
    /// truncated file still shows what it has).
    public func boxesLeniently(in range: Range<Int64>) -> (boxes: [Box], error: BoxError?) {
        var found: [Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound, range.upperBound - offset >= 8 {
            guard found.count < maxBoxes else {
                return (found, BoxError(.limitExceeded, at: offset, "more than \(maxBoxes) boxes in one range"))
            }
            do {
                let box = try header(at: offset, in: range)
                found.append(box)
                offset += box.size
            } catch {
                return (found, error)
            }
        }
        return (found, nil)
    }

    /// The top-level boxes of the whole source.
    public func topLevel() throws(BoxError) -> [Box] { try boxes(in: fileRange) }

    /// Bytes a container holds before its children: 4 for full boxes that contain boxes (`meta`,
    /// `iref`), 8 for `stsd`/`dref` (version, flags, entry count) and for a `mebx` sample entry (six
    /// reserved bytes and a data reference index). `moov/meta/keys` is not a box container (its
    /// entries are read as a table) and `mebx/keys` holds plain boxes. QuickTime's `moov/meta` is
    /// not a full box, ISO's is: when the
    /// payload's bytes 4..<8 are a plausible child type (`hdlr`), the QuickTime form is assumed.
    public func childrenRange(of box: Box) throws(BoxError) -> Range<Int64> {
        let skip: Int64
        switch box.type {
        case "meta":
            skip = try isQuickTimeMeta(box) ? 0 : 4
        case "stsd", "dref": skip = 8
        case "iref": skip = 4
        case "mebx": skip = 8
        default: skip = 0
        }
        guard skip <= box.payloadSize else {
            throw BoxError(.outOfBounds, at: box.offset, "box '\(box.type)' is too short for its fields")
        }
        return (box.payload.lowerBound + skip)..<box.payload.upperBound
    }

    private func isQuickTimeMeta(_ box: Box) throws(BoxError) -> Bool {
        guard box.payloadSize >= 8 else { return false }
        let head = try source.read(at: box.payload.lowerBound, length: 8)
        let type = FourCC(rawValue: head[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        return type == "hdlr" || type == "keys" || type == "ilst"
    }

    /// The children of a container box (see `childrenRange(of:)` for the bytes skipped first).
    public func children(of box: Box) throws(BoxError) -> [Box] { try boxes(in: try childrenRange(of: box)) }

    /// The first child of `box` of type `type`, if any.
    public func child(_ type: FourCC, of box: Box) throws(BoxError) -> Box? {
        try children(of: box).first { $0.type == type }
    }

    /// The first box reached by following `path` (`["moov", "meta", "keys"]`) from `range` (the whole
    /// file when nil), or nil when some step is missing.
    public func find(_ path: [FourCC], in range: Range<Int64>? = nil) throws(BoxError) -> Box? {
        guard !path.isEmpty, path.count <= maxDepth else { return nil }
        var candidates = try boxes(in: range ?? fileRange)
        var found: Box?
        for (depth, type) in path.enumerated() {
            guard let next = candidates.first(where: { $0.type == type }) else { return nil }
            found = next
            if depth < path.count - 1 { candidates = try children(of: next) }
        }
        return found
    }

    /// Every box reached by following `path`, where each step may match several boxes
    /// (`["moov", "trak"]` lists every track). At most `maxBoxes` results.
    public func findAll(_ path: [FourCC], in range: Range<Int64>? = nil) throws(BoxError) -> [Box] {
        guard !path.isEmpty, path.count <= maxDepth else { return [] }
        var level = try boxes(in: range ?? fileRange).filter { $0.type == path[0] }
        for type in path.dropFirst() {
            var next: [Box] = []
            for box in level {
                next += try children(of: box).filter { $0.type == type }
                if next.count > maxBoxes {
                    throw BoxError(.limitExceeded, at: box.offset, "more than \(maxBoxes) boxes on one path")
                }
            }
            level = next
        }
        return level
    }

    /// The payload of `box`, whole, when it holds at most `limit` bytes; throws `limitExceeded`
    /// otherwise (so a lying size never becomes a huge allocation).
    public func payload(of box: Box, limit: Int = 1 << 20) throws(BoxError) -> [UInt8] {
        guard box.payloadSize <= Int64(limit) else {
            throw BoxError(
                .limitExceeded, at: box.offset, "box '\(box.type)' holds \(box.payloadSize) bytes, over \(limit)")
        }
        return try source.read(at: box.payload.lowerBound, length: Int(box.payloadSize))
    }

    /// The payload as a cursor, positioned at its start (file offsets in its errors).
    public func cursor(of box: Box, limit: Int = 1 << 20) throws(BoxError) -> ByteCursor {
        ByteCursor(try payload(of: box, limit: limit), base: box.payload.lowerBound)
    }

    /// The version and flags of a full box, read from its first four payload bytes.
    public func fullBoxHeader(of box: Box) throws(BoxError) -> FullBoxHeader {
        try source.check(box.payload.lowerBound, 4, inside: box.range)
        var cursor = ByteCursor(try source.read(at: box.payload.lowerBound, length: 4), base: box.payload.lowerBound)
        let word = try cursor.u32()
        return FullBoxHeader(version: UInt8(word >> 24), flags: word & 0xff_ffff)
    }
}
