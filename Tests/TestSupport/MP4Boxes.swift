import Foundation

/// Small edits of MP4/QuickTime files that ffmpeg 5.1 cannot make, for test media: a track's display
/// matrix (mirrors), and extra boxes in a video sample entry (`dvcC`/`dvvC`, `mdcv`/`clli`).
///
/// Only for files whose `moov` follows `mdat` (ffmpeg's default): growing `moov` then moves no
/// sample data, so chunk offsets stay valid.
public enum MP4Boxes {
    struct Box {
        var type: String
        var offset: Int
        var size: Int
        var headerSize: Int
        var contentOffset: Int { offset + headerSize }
        var end: Int { offset + size }
    }

    /// Container boxes on the way from `moov` to a video sample entry.
    static let containers: Set<String> = ["moov", "trak", "mdia", "minf", "stbl"]

    static func children(_ data: [UInt8], from start: Int, to end: Int) -> [Box] {
        var boxes: [Box] = []
        var offset = start
        while offset + 8 <= end {
            var size = Int(readUInt32(data, offset))
            let type = String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header = 8
            if size == 1 {
                size = Int(readUInt64(data, offset + 8))
                header = 16
            } else if size == 0 {
                size = end - offset
            }
            guard size >= header, offset + size <= end else { break }
            boxes.append(Box(type: type, offset: offset, size: size, headerSize: header))
            offset += size
        }
        return boxes
    }

    /// The chain of boxes from the top level down to the first video track's `tkhd` and sample entry.
    static func videoTrackPath(_ data: [UInt8]) throws -> (ancestors: [Box], tkhd: Box, entryParents: [Box], entry: Box)
    {
        let top = children(data, from: 0, to: data.count)
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw ToolFailure(message: "no moov box") }
        if let mdat = top.first(where: { $0.type == "mdat" }), mdat.offset > moov.offset {
            throw ToolFailure(message: "moov precedes mdat: growing it would move the samples")
        }
        for trak in children(data, from: moov.contentOffset, to: moov.end) where trak.type == "trak" {
            let trakChildren = children(data, from: trak.contentOffset, to: trak.end)
            guard let tkhd = trakChildren.first(where: { $0.type == "tkhd" }),
                let mdia = trakChildren.first(where: { $0.type == "mdia" })
            else { continue }
            let mdiaChildren = children(data, from: mdia.contentOffset, to: mdia.end)
            guard let hdlr = mdiaChildren.first(where: { $0.type == "hdlr" }),
                String(decoding: data[(hdlr.contentOffset + 8)..<(hdlr.contentOffset + 12)], as: UTF8.self) == "vide",
                let minf = mdiaChildren.first(where: { $0.type == "minf" }),
                let stbl = children(data, from: minf.contentOffset, to: minf.end).first(where: { $0.type == "stbl" }),
                let stsd = children(data, from: stbl.contentOffset, to: stbl.end).first(where: { $0.type == "stsd" })
            else { continue }
            // stsd: version/flags (4), entry count (4), then the sample entries.
            guard let entry = children(data, from: stsd.contentOffset + 8, to: stsd.end).first else { continue }
            return ([moov, trak], tkhd, [mdia, minf, stbl, stsd], entry)
        }
        throw ToolFailure(message: "no video track")
    }

    /// Writes a display matrix into the first video track's `tkhd`: `a, b, c, d` (16.16 fixed point in
    /// the file) map a source point (p, q) to (a·p + c·q + x, b·p + d·q + y).
    public static func setDisplayMatrix(_ url: URL, a: Int, b: Int, c: Int, d: Int, x: Int, y: Int) throws {
        var data = [UInt8](try Data(contentsOf: url))
        let path = try videoTrackPath(data)
        let version = data[path.tkhd.contentOffset]
        // tkhd: version/flags, times and ids (20 bytes in v0, 32 in v1), reserved 8, layer,
        // alternate group, volume, reserved (8), then the 3x3 matrix.
        let matrixOffset = path.tkhd.contentOffset + 4 + (version == 1 ? 32 : 20) + 8 + 8
        let values: [Int32] = [
            Int32(a << 16), Int32(b << 16), 0, Int32(c << 16), Int32(d << 16), 0, Int32(x << 16), Int32(y << 16),
            1 << 30,
        ]
        for (index, value) in values.enumerated() {
            writeUInt32(&data, matrixOffset + index * 4, UInt32(bitPattern: value))
        }
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
            writeUInt32(&data, box.offset, UInt32(box.size + insertion.count))
        }
        if let renameEntry {
            data.replaceSubrange((path.entry.offset + 4)..<(path.entry.offset + 8), with: Array(renameEntry.utf8))
        }
        data.insert(contentsOf: insertion, at: path.entry.end)
        try Data(data).write(to: url)
    }

    /// A box: size, type, payload.
    public static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        appendUInt32(&bytes, UInt32(8 + payload.count))
        bytes += Array(type.utf8)
        return bytes + payload
    }

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
        appendUInt32(&payload, UInt32(maxLuminance))
        appendUInt32(&payload, UInt32(minLuminance))
        return box("mdcv", payload)
    }

    /// A `clli` box: MaxCLL and MaxFALL in cd/m².
    public static func contentLightBox(maxCLL: Int, maxFALL: Int) -> [UInt8] {
        box("clli", [UInt8(maxCLL >> 8), UInt8(maxCLL & 0xff), UInt8(maxFALL >> 8), UInt8(maxFALL & 0xff)])
    }

    /// The types of the first video sample entry and of the boxes inside it (`hvc1`, [`hvcC`, `colr`, …]).
    public static func videoSampleEntry(_ url: URL) throws -> (type: String, children: [String]) {
        let data = [UInt8](try Data(contentsOf: url))
        let top = children(data, from: 0, to: data.count)
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw ToolFailure(message: "no moov box") }
        var entry: Box?
        func search(_ box: Box) {
            guard entry == nil else { return }
            if box.type == "stsd" {
                if let first = children(data, from: box.contentOffset + 8, to: box.end).first,
                    ["hvc1", "hev1", "avc1", "dvh1", "dvhe"].contains(first.type)
                {
                    entry = first
                }
                return
            }
            if containers.contains(box.type) {
                children(data, from: box.contentOffset, to: box.end).forEach(search)
            }
        }
        search(moov)
        guard let entry else { throw ToolFailure(message: "no video sample entry") }
        // A visual sample entry has 78 bytes of fields before its child boxes.
        let inner = children(data, from: entry.contentOffset + 78, to: entry.end).map(\.type)
        return (entry.type, inner)
    }

    static func readUInt32(_ data: [UInt8], _ offset: Int) -> UInt32 {
        data[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
    static func readUInt64(_ data: [UInt8], _ offset: Int) -> UInt64 {
        data[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }
    static func writeUInt32(_ data: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for index in 0..<4 { data[offset + index] = UInt8((value >> (24 - 8 * UInt32(index))) & 0xff) }
    }
    static func appendUInt32(_ data: inout [UInt8], _ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { data.append(UInt8((value >> UInt32(shift)) & 0xff)) }
    }
}
