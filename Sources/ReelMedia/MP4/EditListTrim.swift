import Foundation
import ReelBoxes

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
        let file = try MovieFile(descriptor: descriptor, call: "edit list", context: "cannot end the cut at its range")
        guard let moov = file.topLevelBoxes().first(where: { $0.type == "moov" }) else {
            throw file.failure("no moov box")
        }
        var movie = try file.read(at: moov.offset, count: Int(moov.size))
        let reader = BoxReader(BufferSource(movie))
        let content = MovieFile.children(reader, from: Int64(moov.headerSize), to: Int64(movie.count))
        guard let mvhd = content.first(where: { $0.type == "mvhd" }), mvhd.payloadSize >= 32 else {
            throw file.failure("no movie header")
        }
        let movieHeader = Int(mvhd.payload.lowerBound)
        let movieWide = movie[movieHeader] == 1
        let timescale = Double(try file.number(in: movie, at: movieHeader + (movieWide ? 20 : 12), wide: false))
        guard timescale > 0, seconds > 0 else { throw file.failure("a movie time scale of 0") }
        let target = UInt64((seconds * timescale).rounded())

        var result = Result(tracksTrimmed: 0, tracksWithoutEdits: 0)
        var longest: UInt64 = 0
        for trak in content where trak.type == "trak" {
            let boxes = MovieFile.children(reader, of: trak)
            guard let tkhd = boxes.first(where: { $0.type == "tkhd" }) else {
                throw file.failure("a track without header")
            }
            let trackHeader = Int(tkhd.payload.lowerBound)
            let trackWide = movie[trackHeader] == 1
            let durationOffset = trackHeader + (trackWide ? 28 : 20)
            guard durationOffset + (trackWide ? 8 : 4) <= Int(tkhd.range.upperBound) else {
                throw file.failure("a short track header")
            }
            var trackDuration = try file.number(in: movie, at: durationOffset, wide: trackWide)
            guard let edts = boxes.first(where: { $0.type == "edts" }),
                let elst = MovieFile.children(reader, of: edts).first(where: { $0.type == "elst" })
            else {
                result.tracksWithoutEdits += 1
                longest = max(longest, trackDuration)
                continue
            }
            let list = Int(elst.payload.lowerBound)
            let wide = movie[list] == 1
            let entrySize = wide ? 20 : 12
            let count = Int(try file.number(in: movie, at: list + 4, wide: false))
            let first = list + 8
            guard count > 0, first + count * entrySize <= Int(elst.range.upperBound) else {
                throw file.failure("a short edit list")
            }
            // Edits before the last one (an empty edit delaying the track) keep their length.
            var before: UInt64 = 0
            for entry in 0..<(count - 1) {
                before += try file.number(in: movie, at: first + entry * entrySize, wide: wide)
            }
            let last = first + (count - 1) * entrySize
            let lastDuration = try file.number(in: movie, at: last, wide: wide)
            if before < target, before + lastDuration > target {
                MovieFile.put(target - before, in: &movie, at: last, wide: wide)
                trackDuration = target
                MovieFile.put(trackDuration, in: &movie, at: durationOffset, wide: trackWide)
                result.tracksTrimmed += 1
            }
            longest = max(longest, trackDuration)
        }
        let movieDurationOffset = movieHeader + (movieWide ? 24 : 16)
        if longest > 0, longest < (try file.number(in: movie, at: movieDurationOffset, wide: movieWide)) {
            MovieFile.put(longest, in: &movie, at: movieDurationOffset, wide: movieWide)
        }
        if result.tracksTrimmed > 0 { try file.write(movie, at: moov.offset) }
        return result
    }
}
