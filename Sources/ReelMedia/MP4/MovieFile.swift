internal import CFFmpegShim
import Foundation
import ReelBoxes

/// A finished MP4/QuickTime file edited in place through its descriptor (pread, pwrite): the surgery
/// FFmpeg 5.1 cannot do (`DolbyVisionBox`, `EditListTrim`). Its boxes are found by ReelBoxes' reader,
/// the package's one ISO-BMFF reader; this type reads and writes the bytes, and moves them.
///
/// Boxes are listed as the muxer wrote them, up to the first one that does not fit its parent: a walk
/// stops there rather than fail, and what the caller needs and does not find is its error.
struct MovieFile: ByteSource {
    let descriptor: Int32
    /// The file's size when it was opened for the edit (what its boxes are read against).
    let count: Int64
    /// The failing call's name and the start of every message (`cannot keep Dolby Vision`).
    let call: String
    let context: String

    init(descriptor: Int32, call: String, context: String) throws(MediaError) {
        self.descriptor = descriptor
        self.call = call
        self.context = context
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw MediaError(
                kind: .outputFailed, call: call, message: "\(context): fstat: \(String(cString: strerror(errno)))")
        }
        count = Int64(status.st_size)
    }

    /// An error of this edit, naming what went wrong.
    func failure(_ message: String) -> MediaError {
        MediaError(kind: .outputFailed, call: call, message: "\(context): \(message)")
    }

    /// `ByteSource`: exactly `length` bytes at `offset`, inside the file as it was opened.
    func read(at offset: Int64, length: Int) throws(BoxError) -> [UInt8] {
        try check(offset, Int64(length), inside: 0..<count)
        var bytes = [UInt8](repeating: 0, count: length)
        var done = 0
        while done < length {
            let got = bytes.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress! + done, length - done, off_t(offset) + off_t(done))
            }
            if got < 0 && errno == EINTR { continue }
            if got < 0 { throw BoxError(.readFailed, at: offset, "pread: \(String(cString: strerror(errno)))") }
            guard got > 0 else { throw BoxError(.outOfBounds, at: offset, "the file ends inside a box") }
            done += got
        }
        return bytes
    }

    /// `count` bytes at `offset`, or this edit's error.
    func read(at offset: Int64, count: Int) throws(MediaError) -> [UInt8] {
        do {
            return try read(at: offset, length: count)
        } catch {
            throw failure(error.message)
        }
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
    func topLevelBoxes() -> [Box] {
        BoxReader(self).boxesLeniently(in: 0..<count).boxes
    }

    /// The boxes of `range` in `movie` (a `moov` read whole, offsets into it); none when the range is
    /// empty or reversed (a box too short for the fields before its children).
    static func children(_ movie: BoxReader, _ range: Range<Int64>) -> [Box] {
        movie.boxesLeniently(in: range).boxes
    }

    static func children(_ movie: BoxReader, from start: Int64, to end: Int64) -> [Box] {
        start < end ? children(movie, start..<end) : []
    }

    /// The children of a container box (no fields before them: `trak`, `mdia`, `minf`, `stbl`, `edts`).
    static func children(_ movie: BoxReader, of box: Box) -> [Box] {
        children(movie, box.payload)
    }

    /// trak, mdia, minf, stbl, stsd and the first sample entry of track `track` in a `moov`.
    static func sampleEntryPath(in movie: BoxReader, track: Int) -> [Box]? {
        let traks = children(movie, from: 8, to: movie.source.count).filter { $0.type == "trak" }
        guard track < traks.count else { return nil }
        var path = [traks[track]]
        for type in ["mdia", "minf", "stbl", "stsd"] {
            guard let child = children(movie, of: path.last!).first(where: { $0.type == FourCC(type) }) else {
                return nil
            }
            path.append(child)
        }
        // stsd: version and flags, entry count, then the entries.
        let stsd = path.last!
        guard let entry = children(movie, from: stsd.payload.lowerBound + 8, to: stsd.range.upperBound).first else {
            return nil
        }
        return path + [entry]
    }

    /// Adds `distance` to every chunk offset (`stco`, `co64`) of every track of a `moov` held in
    /// `movie`.
    func shiftChunkOffsets(in movie: inout [UInt8], by distance: Int) throws(MediaError) {
        var tables: [Box] = []
        let reader = BoxReader(BufferSource(movie))
        func visit(_ boxes: [Box]) {
            for box in boxes {
                switch box.type {
                case "trak", "mdia", "minf", "stbl": visit(Self.children(reader, of: box))
                case "stco", "co64": tables.append(box)
                default: break
                }
            }
        }
        visit(Self.children(reader, from: 8, to: Int64(movie.count)))
        for table in tables {
            let wide = table.type == "co64"
            let width = wide ? 8 : 4
            let entries = Int(try number(in: movie, at: Int(table.payload.lowerBound) + 4, wide: false))
            var position = Int(table.payload.lowerBound) + 8
            for _ in 0..<entries {
                guard position + width <= Int(table.range.upperBound) else { break }
                let value = try number(in: movie, at: position, wide: wide) + UInt64(distance)
                guard wide || value <= UInt64(UInt32.max) else { throw failure("a chunk offset passes 4 GiB") }
                Self.put(value, in: &movie, at: position, wide: wide)
                position += width
            }
        }
    }

    /// The big-endian number of 4 bytes (8 when `wide`) at `offset` in `data`.
    func number(in data: [UInt8], at offset: Int, wide: Bool) throws(MediaError) -> UInt64 {
        var cursor = ByteCursor(data)
        do {
            try cursor.seek(to: offset)
            return wide ? try cursor.u64() : UInt64(try cursor.u32())
        } catch {
            throw failure(error.message)
        }
    }

    /// Writes `value` as 4 big-endian bytes (8 when `wide`) at `offset` in `data`.
    static func put(_ value: UInt64, in data: inout [UInt8], at offset: Int, wide: Bool) {
        let bytes = wide ? BoxWriter.be64(value) : BoxWriter.be32(UInt32(truncatingIfNeeded: value))
        data.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
    }
}
