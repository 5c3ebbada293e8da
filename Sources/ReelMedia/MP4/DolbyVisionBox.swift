internal import CFFmpeg
internal import CFFmpegShim
import Foundation

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
    var bytes: [UInt8] {
        let type = profile > 7 ? "dvvC" : "dvcC"
        return MovieFile.bigEndian(UInt32(8 + record.count)) + Array(type.utf8) + record
    }

    /// Adds the box to the sample entry of track `track` (0-based, in stream order) of the file open
    /// at `descriptor`. Does nothing when the entry already has one.
    func write(toTrack track: Int, of descriptor: Int32) throws(MediaError) {
        let file = MovieFile(descriptor: descriptor)
        let top = try file.topLevelBoxes()
        guard let moov = top.first(where: { $0.type == "moov" }), moov.headerSize == 8 else {
            throw MovieFile.failure("no moov box with a 32-bit size")
        }
        let mediaFirst = top.contains { $0.type == "mdat" && $0.offset < moov.offset }
        var movie = try file.read(at: moov.offset, count: moov.size)
        guard let path = MovieFile.sampleEntryPath(in: movie, track: track) else {
            throw MovieFile.failure("no sample entry for track \(track)")
        }
        let entry = path.last!
        let children = MovieFile.children(of: movie, from: entry.contentOffset + 78, to: entry.end)
        if children.contains(where: { $0.type == "dvcC" || $0.type == "dvvC" }) { return }
        let insertion = bytes
        for box in path {
            guard box.headerSize == 8 else { throw MovieFile.failure("a 64-bit \(box.type) box") }
            MovieFile.putUInt32(&movie, at: box.offset, UInt32(box.size + insertion.count))
        }
        MovieFile.putUInt32(&movie, at: 0, UInt32(moov.size + insertion.count))
        if let sampleEntry {
            movie.replaceSubrange((entry.offset + 4)..<(entry.offset + 8), with: Array(sampleEntry.utf8))
        }
        movie.insert(contentsOf: insertion, at: entry.end)

        let fileSize = try file.size()
        if mediaFirst {
            if moov.offset + Int64(moov.size) == fileSize {
                try file.write(movie, at: moov.offset)
            } else {
                // Something follows the moov: the old one becomes free space, the new one goes last.
                try file.write(Array("free".utf8), at: moov.offset + 4)
                try file.write(movie, at: fileSize)
            }
            return
        }
        let after = moov.offset + Int64(moov.size)
        if let free = top.first(where: { $0.offset == after && $0.type == "free" }),
            free.size == insertion.count || free.size >= insertion.count + 8
        {
            // The reserved space after a faststart moov takes the box: no sample moves.
            try file.write(movie, at: moov.offset)
            let left = free.size - insertion.count
            if left > 0 {
                try file.write(
                    MovieFile.bigEndian(UInt32(left)) + Array("free".utf8), at: after + Int64(insertion.count))
            }
            return
        }
        // No room: the media moves back by the box's size, and the chunk offsets with it.
        try MovieFile.shiftChunkOffsets(in: &movie, by: insertion.count)
        try file.move(from: after, to: fileSize, by: Int64(insertion.count))
        try file.write(movie, at: moov.offset)
    }
}

/// Reads and writes the boxes of an MP4/QuickTime file through a descriptor (pread/pwrite).
struct MovieFile {
    struct Box {
        var type: String
        var offset: Int64
        var size: Int
        var headerSize: Int
    }
    /// A box inside a buffer (offsets into the buffer).
    struct Inner {
        var type: String
        var offset: Int
        var size: Int
        var headerSize: Int
        var contentOffset: Int { offset + headerSize }
        var end: Int { offset + size }
    }

    let descriptor: Int32

    static func failure(_ message: String) -> MediaError {
        MediaError(kind: .outputFailed, call: "dolby vision box", message: "cannot keep Dolby Vision: \(message)")
    }

    func size() throws(MediaError) -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw MovieFile.failure("fstat: \(String(cString: strerror(errno)))")
        }
        return Int64(status.st_size)
    }

    func read(at offset: Int64, count: Int) throws(MediaError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw MovieFile.failure("pread: \(String(cString: strerror(errno)))") }
            guard got > 0 else { throw MovieFile.failure("the file ends inside a box") }
            done += got
        }
        return bytes
    }

    func write(_ bytes: [UInt8], at offset: Int64) throws(MediaError) {
        var done = 0
        while done < bytes.count {
            let wrote = bytes.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else {
                let code = errno
                throw MediaError(
                    call: "pwrite", code: reel_averror(code), kind: code == ENOSPC ? .noSpace : .outputFailed,
                    context: "cannot write the output")
            }
            done += wrote
        }
    }

    /// Moves bytes [start, end) to start + distance, from the end backwards (the ranges overlap).
    func move(from start: Int64, to end: Int64, by distance: Int64) throws(MediaError) {
        let chunk: Int64 = 1 << 20
        var position = end
        while position > start {
            let from = max(start, position - chunk)
            let bytes = try read(at: from, count: Int(position - from))
            try write(bytes, at: from + distance)
            position = from
        }
    }

    /// The boxes at the top of the file.
    func topLevelBoxes() throws(MediaError) -> [Box] {
        let end = try size()
        var boxes: [Box] = []
        var offset: Int64 = 0
        while offset + 8 <= end {
            let header = try read(at: offset, count: min(16, Int(end - offset)))
            var size = Int64(MovieFile.uInt32(header, 0))
            var headerSize = 8
            if size == 1, header.count >= 16 {
                size = Int64(bitPattern: MovieFile.uInt64(header, 8))
                headerSize = 16
            } else if size == 0 {
                size = end - offset
            }
            guard size >= Int64(headerSize), offset + size <= end else { break }
            let type = String(decoding: header[4..<8], as: UTF8.self)
            boxes.append(Box(type: type, offset: offset, size: Int(size), headerSize: headerSize))
            offset += size
        }
        return boxes
    }

    static func children(of data: [UInt8], from start: Int, to end: Int) -> [Inner] {
        var boxes: [Inner] = []
        var offset = start
        while offset + 8 <= end {
            var size = Int(uInt32(data, offset))
            var header = 8
            if size == 1, offset + 16 <= end {
                size = Int(uInt64(data, offset + 8))
                header = 16
            } else if size == 0 {
                size = end - offset
            }
            guard size >= header, offset + size <= end else { break }
            boxes.append(
                Inner(
                    type: String(decoding: data[(offset + 4)..<(offset + 8)], as: UTF8.self), offset: offset,
                    size: size, headerSize: header))
            offset += size
        }
        return boxes
    }

    /// trak, mdia, minf, stbl, stsd and the first sample entry of track `track` in a `moov` buffer.
    static func sampleEntryPath(in movie: [UInt8], track: Int) -> [Inner]? {
        let traks = children(of: movie, from: 8, to: movie.count).filter { $0.type == "trak" }
        guard track < traks.count else { return nil }
        var path = [traks[track]]
        for type in ["mdia", "minf", "stbl", "stsd"] {
            let parent = path.last!
            guard
                let child = children(of: movie, from: parent.contentOffset, to: parent.end).first(where: {
                    $0.type == type
                })
            else { return nil }
            path.append(child)
        }
        // stsd: version and flags, entry count, then the entries.
        let stsd = path.last!
        guard let entry = children(of: movie, from: stsd.contentOffset + 8, to: stsd.end).first else { return nil }
        return path + [entry]
    }

    /// Adds `distance` to every chunk offset of every track of a `moov` buffer.
    static func shiftChunkOffsets(in movie: inout [UInt8], by distance: Int) throws(MediaError) {
        func visit(_ start: Int, _ end: Int) throws(MediaError) {
            for box in children(of: movie, from: start, to: end) {
                switch box.type {
                case "trak", "mdia", "minf", "stbl":
                    try visit(box.contentOffset, box.end)
                case "stco", "co64":
                    let wide = box.type == "co64"
                    let count = Int(uInt32(movie, box.contentOffset + 4))
                    var position = box.contentOffset + 8
                    for _ in 0..<count {
                        guard position + (wide ? 8 : 4) <= box.end else { break }
                        if wide {
                            let value = uInt64(movie, position) + UInt64(distance)
                            for index in 0..<8 {
                                movie[position + index] = UInt8((value >> (56 - 8 * UInt64(index))) & 0xff)
                            }
                            position += 8
                        } else {
                            let value = UInt64(uInt32(movie, position)) + UInt64(distance)
                            guard value <= UInt64(UInt32.max) else { throw failure("a chunk offset passes 4 GiB") }
                            putUInt32(&movie, at: position, UInt32(value))
                            position += 4
                        }
                    }
                default:
                    break
                }
            }
        }
        try visit(8, movie.count)
    }

    static func uInt32(_ data: [UInt8], _ offset: Int) -> UInt32 {
        data[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
    static func uInt64(_ data: [UInt8], _ offset: Int) -> UInt64 {
        data[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }
    static func putUInt32(_ data: inout [UInt8], at offset: Int, _ value: UInt32) {
        for index in 0..<4 { data[offset + index] = UInt8((value >> (24 - 8 * UInt32(index))) & 0xff) }
    }
    static func bigEndian(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8((value >> (24 - 8 * UInt32($0))) & 0xff) }
    }
}
