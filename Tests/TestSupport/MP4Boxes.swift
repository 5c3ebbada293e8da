import Foundation
import ReelBoxes

/// Small edits of MP4/QuickTime files that ffmpeg 5.1 cannot make, for test media: a track's display
/// matrix (mirrors), and extra boxes in a video sample entry (`dvcC`/`dvvC`, `mdcv`/`clli`).
///
/// Only for files whose `moov` follows `mdat` (ffmpeg's default): growing `moov` then moves no
/// sample data, so chunk offsets stay valid.
public enum MP4Boxes {
    /// Container boxes on the way from `moov` to a video sample entry.
    static let containers: Set<FourCC> = ["moov", "trak", "mdia", "minf", "stbl"]

    /// The boxes of `start..<end` in the file `reader` holds, up to the first that does not fit.
    static func children(_ reader: BoxReader, from start: Int64, to end: Int64) -> [Box] {
        start < end ? reader.boxesLeniently(in: start..<end).boxes : []
    }

    static func children(_ reader: BoxReader, of box: Box) -> [Box] {
        children(reader, from: box.payload.lowerBound, to: box.range.upperBound)
    }

    /// A `hdlr` box's handler type (`vide`, `soun`): after version/flags (4) and pre-defined (4).
    static func handlerType(_ reader: BoxReader, _ hdlr: Box) -> FourCC? {
        guard var cursor = try? reader.cursor(of: hdlr), (try? cursor.skip(8)) != nil else { return nil }
        return try? cursor.fourCC()
    }

    /// The chain of boxes from the top level down to the first video track's `tkhd` and sample entry.
    static func videoTrackPath(_ data: [UInt8]) throws -> (ancestors: [Box], tkhd: Box, entryParents: [Box], entry: Box)
    {
        let reader = BoxReader(BufferSource(data))
        let top = children(reader, from: 0, to: Int64(data.count))
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw ToolFailure(message: "no moov box") }
        if let mdat = top.first(where: { $0.type == "mdat" }), mdat.offset > moov.offset {
            throw ToolFailure(message: "moov precedes mdat: growing it would move the samples")
        }
        for trak in children(reader, of: moov) where trak.type == "trak" {
            let trakChildren = children(reader, of: trak)
            guard let tkhd = trakChildren.first(where: { $0.type == "tkhd" }),
                let mdia = trakChildren.first(where: { $0.type == "mdia" })
            else { continue }
            let mdiaChildren = children(reader, of: mdia)
            guard let hdlr = mdiaChildren.first(where: { $0.type == "hdlr" }),
                handlerType(reader, hdlr) == "vide",
                let minf = mdiaChildren.first(where: { $0.type == "minf" }),
                let stbl = children(reader, of: minf).first(where: { $0.type == "stbl" }),
                let stsd = children(reader, of: stbl).first(where: { $0.type == "stsd" })
            else { continue }
            // stsd: version/flags (4), entry count (4), then the sample entries.
            guard let entry = children(reader, from: stsd.payload.lowerBound + 8, to: stsd.range.upperBound).first
            else { continue }
            return ([moov, trak], tkhd, [mdia, minf, stbl, stsd], entry)
        }
        throw ToolFailure(message: "no video track")
    }

    /// Writes a display matrix into the first video track's `tkhd`: `a, b, c, d` (16.16 fixed point in
    /// the file) map a source point (p, q) to (a·p + c·q + x, b·p + d·q + y).
    public static func setDisplayMatrix(_ url: URL, a: Int, b: Int, c: Int, d: Int, x: Int, y: Int) throws {
        var data = [UInt8](try Data(contentsOf: url))
        let path = try videoTrackPath(data)
        let header = Int(path.tkhd.payload.lowerBound)
        let version = data[header]
        // tkhd: version/flags, times and ids (20 bytes in v0, 32 in v1), reserved 8, layer,
        // alternate group, volume, reserved (8), then the 3x3 matrix.
        let matrixOffset = header + 4 + (version == 1 ? 32 : 20) + 8 + 8
        let values: [Int32] = [
            Int32(a << 16), Int32(b << 16), 0, Int32(c << 16), Int32(d << 16), 0, Int32(x << 16), Int32(y << 16),
            1 << 30,
        ]
        let matrix = values.flatMap { BoxWriter.be32(UInt32(bitPattern: $0)) }
        data.replaceSubrange(matrixOffset..<(matrixOffset + matrix.count), with: matrix)
        try Data(data).write(to: url)
    }

    /// Appends boxes to the first video sample entry (after its own children) and grows every
    /// enclosing box; `renameEntry` changes the entry's type (e.g. `hvc1` to `dvh1`).
    public static func appendToVideoSampleEntry(_ url: URL, boxes: [[UInt8]], renameEntry: String? = nil) throws {
        var data = [UInt8](try Data(contentsOf: url))
        let path = try videoTrackPath(data)
        let insertion = boxes.flatMap { $0 }
        for box in path.ancestors + path.entryParents + [path.entry] {
            guard box.headerSize == 8 else { throw ToolFailure(message: "64-bit box sizes are not handled") }
            let at = Int(box.offset)
            data.replaceSubrange(at..<(at + 4), with: BoxWriter.be32(UInt32(box.size) + UInt32(insertion.count)))
        }
        if let renameEntry {
            let at = Int(path.entry.offset) + 4
            data.replaceSubrange(at..<(at + 4), with: FourCC(renameEntry).bytes)
        }
        data.insert(contentsOf: insertion, at: Int(path.entry.range.upperBound))
        try Data(data).write(to: url)
    }

    /// A box: size, type, payload.
    public static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { BoxWriter.box(FourCC(type), payload) }

    /// A Dolby Vision configuration box: `dvcC` for profiles up to 7, `dvvC` above (24-byte record).
    public static func dolbyVisionBox(
        profile: Int, level: Int, compatibilityID: Int, rpu: Bool = true, el: Bool = false
    )
        -> [UInt8]
    {
        var record = [UInt8](repeating: 0, count: 24)
        record[0] = 1  // dv_version_major
        record[1] = 0  // dv_version_minor
        // profile (7 bits), level (6 bits), rpu, el, bl flags (1 bit each)
        let bits = UInt16(profile & 0x7f) << 9 | UInt16(level & 0x3f) << 3 | (rpu ? 4 : 0) | (el ? 2 : 0) | 1
        record[2] = UInt8(bits >> 8)
        record[3] = UInt8(bits & 0xff)
        record[4] = UInt8((compatibilityID & 0x0f) << 4)
        return box(profile > 7 ? "dvvC" : "dvcC", record)
    }

    /// An `mdcv` box (SMPTE ST 2086 in ISO/IEC 23001-8 form): primaries G, B, R and white point in
    /// 0.00002 units, luminance in 0.0001 cd/m².
    public static func masteringDisplayBox(
        green: (Int, Int), blue: (Int, Int), red: (Int, Int), white: (Int, Int), maxLuminance: Int, minLuminance: Int
    ) -> [UInt8] {
        var payload: [UInt8] = []
        for (x, y) in [green, blue, red, white] {
            payload += [UInt8(x >> 8), UInt8(x & 0xff), UInt8(y >> 8), UInt8(y & 0xff)]
        }
        payload += BoxWriter.be32(UInt32(maxLuminance)) + BoxWriter.be32(UInt32(minLuminance))
        return box("mdcv", payload)
    }

    /// A `clli` box: MaxCLL and MaxFALL in cd/m².
    public static func contentLightBox(maxCLL: Int, maxFALL: Int) -> [UInt8] {
        box("clli", [UInt8(maxCLL >> 8), UInt8(maxCLL & 0xff), UInt8(maxFALL >> 8), UInt8(maxFALL & 0xff)])
    }

    /// The types of the first video sample entry and of the boxes inside it (`hvc1`, [`hvcC`, `colr`, …]).
    public static func videoSampleEntry(_ url: URL) throws -> (type: String, children: [String]) {
        let (entry, inner, _) = try firstVideoSampleEntry(url)
        return (entry.type.description, inner.map(\.type.description))
    }

    /// The payload of the box `record` (`avcC`, `hvcC`, …) inside the first video sample entry: a
    /// file's, or an init segment's.
    public static func videoSampleEntryRecord(_ url: URL, named record: FourCC) throws -> [UInt8] {
        let (_, inner, reader) = try firstVideoSampleEntry(url)
        guard let box = inner.first(where: { $0.type == record }) else {
            throw ToolFailure(message: "no \(record) in \(url.path)'s video sample entry")
        }
        return try reader.payload(of: box)
    }

    private static func firstVideoSampleEntry(_ url: URL) throws -> (entry: Box, inner: [Box], reader: BoxReader) {
        let data = [UInt8](try Data(contentsOf: url))
        let reader = BoxReader(BufferSource(data))
        let top = children(reader, from: 0, to: Int64(data.count))
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw ToolFailure(message: "no moov box") }
        var entry: Box?
        func search(_ box: Box) {
            guard entry == nil else { return }
            if box.type == "stsd" {
                if let first = children(reader, from: box.payload.lowerBound + 8, to: box.range.upperBound).first,
                    ["hvc1", "hev1", "avc1", "dvh1", "dvhe", "av01"].contains(first.type)
                {
                    entry = first
                }
                return
            }
            if containers.contains(box.type) {
                children(reader, of: box).forEach(search)
            }
        }
        search(moov)
        guard let entry else { throw ToolFailure(message: "no video sample entry") }
        // A visual sample entry has 78 bytes of fields before its child boxes.
        return (entry, children(reader, from: entry.payload.lowerBound + 78, to: entry.range.upperBound), reader)
    }
}
