import Foundation

/// Ends a finished MP4/QuickTime file's presentation at a given time by shortening its edit lists.
///
/// A Passthrough cut copies whole coded frames: the video runs to the first packet decoded after
/// the range's end (B-frames shown before the end refer to frames shown after it), and the last audio
/// packet straddles the end. FFmpeg 5.1's muxer sizes each edit from the latest presentation time it
/// was given, so players would show those frames. This rewrites, in place, each track's last edit
/// (`elst`) so that the track ends at `seconds`, each track's duration (`tkhd`) to match and the
/// movie's (`mvhd`) to the longest track, as Apple's passthrough export does. Only durations change
/// (the boxes keep their sizes) and only downwards; a track without an edit list is left as it is.
enum EditListTrim {
    /// What was done, for the export's decision and tests.
    struct Result: Equatable {
        /// Tracks whose presentation was shortened.
        var tracksTrimmed: Int
        /// Tracks without an edit list, which keep their length.
        var tracksWithoutEdits: Int
    }

    static func trim(descriptor: Int32, toSeconds seconds: Double) throws(MediaError) -> Result {
        let file = MovieFile(descriptor: descriptor)
        let top = try file.topLevelBoxes()
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw failure("no moov box") }
        var movie = try file.read(at: moov.offset, count: moov.size)
        let content = MovieFile.children(of: movie, from: moov.headerSize, to: movie.count)
        guard let mvhd = content.first(where: { $0.type == "mvhd" }), mvhd.size >= mvhd.headerSize + 32 else {
            throw failure("no movie header")
        }
        let movieVersion = movie[mvhd.contentOffset]
        let timescaleOffset = mvhd.contentOffset + (movieVersion == 1 ? 20 : 12)
        let timescale = Double(MovieFile.uInt32(movie, timescaleOffset))
        guard timescale > 0, seconds > 0 else { throw failure("a movie time scale of 0") }
        let target = UInt64((seconds * timescale).rounded())

        var result = Result(tracksTrimmed: 0, tracksWithoutEdits: 0)
        var longest: UInt64 = 0
        for trak in content where trak.type == "trak" {
            let boxes = MovieFile.children(of: movie, from: trak.contentOffset, to: trak.end)
            guard let tkhd = boxes.first(where: { $0.type == "tkhd" }) else { throw failure("a track without header") }
            let trackVersion = movie[tkhd.contentOffset]
            let durationOffset = tkhd.contentOffset + (trackVersion == 1 ? 28 : 20)
            guard durationOffset + (trackVersion == 1 ? 8 : 4) <= tkhd.end else {
                throw failure("a short track header")
            }
            var trackDuration = read(movie, at: durationOffset, wide: trackVersion == 1)
            guard let edts = boxes.first(where: { $0.type == "edts" }),
                let elst = MovieFile.children(of: movie, from: edts.contentOffset, to: edts.end).first(where: {
                    $0.type == "elst"
                })
            else {
                result.tracksWithoutEdits += 1
                longest = max(longest, trackDuration)
                continue
            }
            let wide = movie[elst.contentOffset] == 1
            let entrySize = wide ? 20 : 12
            let count = Int(MovieFile.uInt32(movie, elst.contentOffset + 4))
            let first = elst.contentOffset + 8
            guard count > 0, first + count * entrySize <= elst.end else { throw failure("a short edit list") }
            // Edits before the last one (an empty edit delaying the track) keep their length.
            var before: UInt64 = 0
            for entry in 0..<(count - 1) { before += read(movie, at: first + entry * entrySize, wide: wide) }
            let last = first + (count - 1) * entrySize
            let lastDuration = read(movie, at: last, wide: wide)
            if before < target, before + lastDuration > target {
                write(&movie, at: last, wide: wide, target - before)
                trackDuration = target
                write(&movie, at: durationOffset, wide: trackVersion == 1, trackDuration)
                result.tracksTrimmed += 1
            }
            longest = max(longest, trackDuration)
        }
        let movieDurationOffset = mvhd.contentOffset + (movieVersion == 1 ? 24 : 16)
        if longest > 0, longest < read(movie, at: movieDurationOffset, wide: movieVersion == 1) {
            write(&movie, at: movieDurationOffset, wide: movieVersion == 1, longest)
        }
        if result.tracksTrimmed > 0 { try file.write(movie, at: moov.offset) }
        return result
    }

    private static func read(_ data: [UInt8], at offset: Int, wide: Bool) -> UInt64 {
        wide ? MovieFile.uInt64(data, offset) : UInt64(MovieFile.uInt32(data, offset))
    }

    private static func write(_ data: inout [UInt8], at offset: Int, wide: Bool, _ value: UInt64) {
        let width = wide ? 8 : 4
        for index in 0..<width {
            data[offset + index] = UInt8((value >> (8 * UInt64(width - 1 - index))) & 0xff)
        }
    }

    private static func failure(_ message: String) -> MediaError {
        MediaError(kind: .outputFailed, call: "edit list", message: "cannot end the cut at its range: \(message)")
    }
}
