internal import CFFmpeg
import Foundation
import ReelBoxes

/// Writes a Dolby Vision configuration box (`dvcC` for profiles up to 7, `dvvC` above) into a
/// finished MP4/QuickTime file's video sample entry: FFmpeg 5.1's muxer drops it even on a copy, and
/// without it players show only the base layer (or, for profile 5, wrong colours).
///
/// The file is edited in place through its descriptor, after the trailer and before the fsync:
/// - `moov` after the media (no faststart): the grown `moov` is written over the old one when it
///   ends the file, else appended and the old one turned into `free`;
/// - `moov` first with a `free` box after it (the reserved space of a remux): the `moov` grows into
///   it, so no sample moves;
/// - `moov` first without room: everything after it moves by the box's size and every chunk offset
///   (`stco`, `co64`) of every track grows by as much.
struct DolbyVisionBox {
    /// The 24-byte DOVIDecoderConfigurationRecord.
    let record: [UInt8]
    let profile: Int
    /// The sample entry type to write instead of the muxer's (`dvh1`, `dvhe`), when the source had one.
    let sampleEntry: String?

    init(record: [UInt8], profile: Int, sampleEntry: String?) {
        self.record = record
        self.profile = profile
        self.sampleEntry = sampleEntry
    }

    /// The configuration of `stream`, or nil when it has none. `sampleEntry` keeps a Dolby Vision
    /// sample entry type of the source (profile 5 streams are `dvh1`, which non-Dolby players skip).
    init?(of stream: UnsafeMutablePointer<AVStream>) {
        var size = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DOVI_CONF, &size),
            size >= MemoryLayout<AVDOVIDecoderConfigurationRecord>.size
        else { return nil }
        let configuration = data.withMemoryRebound(to: AVDOVIDecoderConfigurationRecord.self, capacity: 1) {
            $0.pointee
        }
        var bytes = [UInt8](repeating: 0, count: 24)
        bytes[0] = configuration.dv_version_major
        bytes[1] = configuration.dv_version_minor
        // profile (7 bits), level (6), rpu, el, bl flags (1 each), compatibility id (4), reserved.
        let bits =
            UInt16(configuration.dv_profile & 0x7f) << 9 | UInt16(configuration.dv_level & 0x3f) << 3
            | UInt16(configuration.rpu_present_flag & 1) << 2 | UInt16(configuration.el_present_flag & 1) << 1
            | UInt16(configuration.bl_present_flag & 1)
        bytes[2] = UInt8(bits >> 8)
        bytes[3] = UInt8(bits & 0xff)
        bytes[4] = (configuration.dv_bl_signal_compatibility_id & 0x0f) << 4
        record = bytes
        profile = Int(configuration.dv_profile)
        let tag = InputFile.fourCC(stream.pointee.codecpar.pointee.codec_tag)
        sampleEntry = tag.flatMap { ["dvh1", "dvhe", "dva1", "dvav"].contains($0) ? $0 : nil }
    }

    /// The box: size, `dvcC` or `dvvC`, the record.
    var bytes: [UInt8] { BoxWriter.box(profile > 7 ? "dvvC" : "dvcC", record) }

    /// Adds the box to the sample entry of track `track` (0-based, in stream order) of the file open
    /// at `descriptor`. Does nothing when the entry already has one.
    func write(toTrack track: Int, of descriptor: Int32) throws(MediaError) {
        let file = try MovieFile(descriptor: descriptor, call: "dolby vision box", context: "cannot keep Dolby Vision")
        let top = file.topLevelBoxes()
        guard let moov = top.first(where: { $0.type == "moov" }), moov.headerSize == 8 else {
            throw file.failure("no moov box with a 32-bit size")
        }
        let mediaFirst = top.contains { $0.type == "mdat" && $0.offset < moov.offset }
        var movie = try file.read(at: moov.offset, count: Int(moov.size))
        let reader = BoxReader(BufferSource(movie))
        guard let path = MovieFile.sampleEntryPath(in: reader, track: track) else {
            throw file.failure("no sample entry for track \(track)")
        }
        let entry = path.last!
        // A visual sample entry has 78 bytes of fields before its child boxes.
        let children = MovieFile.children(reader, from: entry.payload.lowerBound + 78, to: entry.range.upperBound)
        if children.contains(where: { $0.type == "dvcC" || $0.type == "dvvC" }) { return }
        let insertion = bytes
        for box in path {
            guard box.headerSize == 8 else { throw file.failure("a 64-bit \(box.type) box") }
            MovieFile.put(UInt64(box.size) + UInt64(insertion.count), in: &movie, at: Int(box.offset), wide: false)
        }
        MovieFile.put(UInt64(moov.size) + UInt64(insertion.count), in: &movie, at: 0, wide: false)
        if let sampleEntry {
            let at = Int(entry.offset) + 4
            movie.replaceSubrange(at..<(at + 4), with: Array(sampleEntry.utf8))
        }
        movie.insert(contentsOf: insertion, at: Int(entry.range.upperBound))

        let fileSize = file.count
        if mediaFirst {
            if moov.range.upperBound == fileSize {
                try file.write(movie, at: moov.offset)
            } else {
                // Something follows the moov: the old one becomes free space, the new one goes last.
                try file.write(FourCC("free").bytes, at: moov.offset + 4)
                try file.write(movie, at: fileSize)
            }
            return
        }
        let after = moov.range.upperBound
        let growth = Int64(insertion.count)
        if let free = top.first(where: { $0.offset == after && $0.type == "free" }),
            free.size == growth || free.size >= growth + 8
        {
            // The reserved space after a faststart moov takes the box: no sample moves.
            try file.write(movie, at: moov.offset)
            let left = free.size - growth
            if left > 0 {
                try file.write(BoxWriter.be32(UInt32(left)) + FourCC("free").bytes, at: after + growth)
            }
            return
        }
        // No room: the media moves back by the box's size, and the chunk offsets with it.
        try file.shiftChunkOffsets(in: &movie, by: insertion.count)
        try file.move(from: after, to: fileSize, by: growth)
        try file.write(movie, at: moov.offset)
    }
}
