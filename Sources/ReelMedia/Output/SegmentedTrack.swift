internal import CFFmpeg
internal import CFFmpegShim
import Foundation

/// One CMAF track of a ladder (a video rung or the audio rendition): a fragmented MP4 of one track,
/// written by FFmpeg's mp4 muxer with `movflags=+frag_custom+empty_moov+default_base_moof+cmaf`,
/// whose fragments Reel cuts itself (`write(_:startsSegment:)`) right before each segment's first
/// packet, then split into `init.mp4` (`ftyp` + `moov` with no samples) and one `seg_NNNNN.m4s` per
/// fragment.
///
/// A track `withEditList` (the AAC rendition and the video rungs) is written with `delay_moov` instead
/// of `empty_moov`: the `moov` is written at the first cut, once the first packets are known, with an
/// edit list whose media_time is the encoder's priming (AAC: 1024 samples before the first real one,
/// at pts −1024) or the video's reorder delay (the first frame decoded two frames before it is shown,
/// `VideoEncodeStage.DecodeTimes.shown`), as CMAF allows (one edit, a media-time offset). Without it the priming packet is presented at 0
/// and the whole rendition plays 21.3 ms (at 48 kHz) after the video. FFmpeg 5.1's own hls fMP4
/// output shifts every track instead (an empty edit of 45 ms on the audio, 67 ms on the video, both
/// late), which CMAF's one-offset rule does not allow.
///
/// The mp4 muxer rather than FFmpeg's hls muxer: the hls muxer's `hls_time` is a minimum (it cuts at
/// the next keyframe after it), writes playlists whose BANDWIDTH is declared rather than measured,
/// names init files `init_N.mp4` and ends the audio with an extra 21 ms segment; cutting here puts
/// every boundary at the IDR the ladder forced, with its exact bytes and times known.
final class SegmentedTrack {
    /// The track's folder, relative to the ladder's folder (`v0`, `a`).
    let name: String
    let folder: String
    let output: OutputFile
    /// Byte offset where each segment starts in the file being written, its start in seconds and
    /// the packets written into it.
    private var starts: [(offset: Int64, seconds: Double, packets: Int)] = []
    /// Where the init segment ends (the header, flushed).
    private var initEnd: Int64 = 0
    /// The `moov` is written at the first cut after the first packets (`delay_moov`).
    private let editList: Bool
    private var moovPending = false
    /// The end of the latest packet (pts + duration), in seconds: where the last segment ends.
    private var endSeconds = 0.0
    private var timeBase = AVRational(num: 1, den: 1)
    private var path: String { folder + "/track.mp4" }

    /// Creates `<root>/<name>/` and the file the track is written into; `withEditList`: see the type.
    init(root: String, name: String, withEditList: Bool = false) throws(MediaError) {
        self.name = name
        editList = withEditList
        folder = root + "/" + name
        if mkdir(folder, 0o755) != 0 {
            throw MediaError(
                call: "mkdir", code: reel_averror(errno), kind: .outputFailed, context: "cannot create \(folder)")
        }
        output = try OutputFile(path: folder + "/track.mp4", muxer: "mp4")
        output.writesDirectly = true
        held = try Packet()
    }

    /// The muxer options of every CMAF track.
    static let muxerOptions = [
        ("movflags", "+frag_custom+empty_moov+default_base_moof+cmaf+skip_sidx+skip_trailer")
    ]

    /// The muxer options of a track with an edit list: `+cmaf` alone turns edit lists off
    /// (`use_editlist` auto), so it is asked for.
    static let editListMuxerOptions = [
        ("movflags", "+frag_custom+delay_moov+default_base_moof+cmaf+skip_sidx+skip_trailer"), ("use_editlist", "1"),
    ]

    /// Writes the header (the init segment, unless it waits for the first packets) once the stream
    /// is added.
    func writeHeader() throws(MediaError) {
        try output.writeHeader(
            metadata: [:], options: editList ? SegmentedTrack.editListMuxerOptions : SegmentedTrack.muxerOptions)
        timeBase = output.context.pointee.streams[0]!.pointee.time_base
        if editList {
            moovPending = true
        } else {
            initEnd = try output.cutFragment()
        }
    }

    /// Writes the packets given since the last cut as one fragment; returns where it ends. A pending
    /// `moov` is written first: with `delay_moov` the muxer's first flush writes `ftyp` + `moov` and
    /// keeps the packets for the next one.
    private func cut() throws(MediaError) -> Int64 {
        if moovPending {
            moovPending = false
            initEnd = try output.cutFragment()
            if !starts.isEmpty { starts[0].offset = initEnd }
        }
        return try output.cutFragment()
    }

    /// The packet given last, not yet written: its duration is made to reach the next packet's
    /// decode time before it is. The mp4 muxer stores a fragment's last sample with the packet's own
    /// duration and starts the next fragment's `tfdt` where that ends; an encoder's packet lasts one
    /// frame while the next IDR's decode time may be further on (x264 with B-frames: two frames), so
    /// without this every segment after the first would start a frame early, at a different time in
    /// each rung.
    private let held: Packet
    private var holding = false

    /// Seconds of media written so far (the end of the latest packet): how far the track is.
    var writtenSeconds: Double { endSeconds }

    /// Whether any segment was begun.
    var hasSegments: Bool { !starts.isEmpty }

    /// Seconds of a packet's pts in the track's time base.
    func seconds(ofPts pts: Int64) -> Double { Double(pts) * Double(timeBase.num) / Double(timeBase.den) }

    /// Takes one packet (stream 0, timestamps in the track's time base); with `startsSegment`, a new
    /// segment starts with it, presented at `seconds(ofPts:)` of its pts.
    func write(_ packet: Packet, startsSegment: Bool) throws(MediaError) {
        let raw = packet.pointer.pointee
        endSeconds = max(endSeconds, seconds(ofPts: raw.pts + max(0, raw.duration)))
        try writeHeld(until: raw.dts)
        if startsSegment || starts.isEmpty {
            // The first segment of a track whose moov waits starts where the moov will end.
            let offset = moovPending && starts.isEmpty ? 0 : try cut()
            starts.append((offset, seconds(ofPts: raw.pts), 0))
        }
        starts[starts.count - 1].packets += 1
        av_packet_move_ref(held.pointer, packet.pointer)
        holding = true
    }

    /// Writes the held packet, lasting until `nextDts` when that is later than it starts.
    private func writeHeld(until nextDts: Int64?) throws(MediaError) {
        guard holding else { return }
        holding = false
        if let nextDts, nextDts != Int64(bitPattern: 0x8000_0000_0000_0000), nextDts > held.pointer.pointee.dts {
            held.pointer.pointee.duration = nextDts - held.pointer.pointee.dts
        }
        try output.write(held)
        held.unref()
    }

    /// Cuts the last fragment, ends the file (no `mfra`: `skip_trailer`) and splits it into
    /// `init.mp4` and the segments; returns what was written.
    func finish() throws(MediaError) -> LadderTrack.Segments {
        try writeHeld(until: nil)
        let end = try cut()
        try output.finish()
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MediaError(kind: .outputFailed, call: "read", message: "cannot read back \(path)")
        }
        guard Int64(data.count) == end else {
            throw MediaError(
                kind: .internalFailure, call: "av_write_trailer",
                message: "the muxer wrote \(Int64(data.count) - end) bytes after the last fragment")
        }
        var segments: [LadderTrack.Segment] = []
        try store(data[0..<Int(initEnd)], as: "init.mp4")
        for (index, start) in starts.enumerated() {
            let next =
                index + 1 < starts.count
                ? (offset: starts[index + 1].offset, seconds: starts[index + 1].seconds)
                : (offset: end, seconds: endSeconds)
            guard next.offset > start.offset else { continue }
            // The edit list trims the priming packets before 0: the segment is presented from 0.
            let presented = editList && index == 0 ? max(0, start.seconds) : start.seconds
            let file = String(format: "seg_%05d.m4s", segments.count)
            try store(data[Int(start.offset)..<Int(next.offset)], as: file)
            segments.append(
                LadderTrack.Segment(
                    file: file, bytes: next.offset - start.offset, startSeconds: presented,
                    durationSeconds: max(0, next.seconds - presented), samples: start.packets))
        }
        if unlink(path) != 0 {
            throw MediaError(call: "unlink", code: reel_averror(errno), kind: .outputFailed, context: path)
        }
        return LadderTrack.Segments(initFile: "init.mp4", initBytes: initEnd, segments: segments)
    }

    /// Writes one file of the track and fsyncs it: the folder is published by a rename, which must
    /// not outlive the bytes after a crash.
    private func store(_ bytes: Data, as file: String) throws(MediaError) {
        let target = folder + "/" + file
        let fd = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MediaError(
                call: "open", code: reel_averror(errno), kind: .outputFailed, context: "cannot create \(target)")
        }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
        if !written || fsync(fd) != 0 {
            let code = errno
            throw MediaError(
                call: "write", code: reel_averror(code), kind: code == ENOSPC ? .noSpace : .outputFailed,
                context: "cannot write \(target)")
        }
    }
}
