internal import CFFmpeg
internal import CFFmpegShim
import Foundation
import Logging

private let readBackLogger = Logger(label: "reel.readback")

/// What reading a freshly written MP4/QuickTime file back found: its streams, where they start and
/// how long they last, whether the index points inside the file, and whether the first and the last
/// group of pictures of each stream decode. ReelExport judges the facts against its plan.
public struct ReadBack: Sendable, Equatable {
    /// One stream of the file.
    public struct Stream: Sendable, Equatable {
        public var index: Int
        public var kind: StreamKind
        /// FFmpeg's short codec name.
        public var codec: String
        /// Presentation time of the first sample (edit lists applied), in seconds.
        public var startSeconds: Double?
        /// The stream's duration, in seconds.
        public var durationSeconds: Double?
        /// Seconds one sample lasts on average (a video frame, an audio packet).
        public var sampleSeconds: Double?
        /// Samples in the index.
        public var samples: Int
        /// Samples the index places (partly) beyond the end of the file: the file was truncated.
        public var samplesPastEnd: Int
        /// Frames decoded from the start up to the second sync sample (video; the first packets of audio).
        public var decodedAtStart: Int
        /// Frames decoded from the last sync sample to the end (video; the last packets of audio); the
        /// same as `decodedAtStart` when both stretches are one.
        public var decodedAtEnd: Int
        /// Why a stretch did not decode, or nil when both did.
        public var decodeFailure: String?
        /// Whether the stream was decoded at all (a copy is compared with what was written instead).
        public var decoded = false
        /// The first way the stream's index or bytes differ from what was written (a copy), or nil.
        public var mismatch: String? = nil
    }

    /// Size of the file.
    public var fileBytes: Int64
    public var streams: [Stream]
}

extension MediaProbe {
    /// Audio packets decoded at each end of an audio stream (about two seconds of AAC at 48 kHz).
    static let audioPacketsChecked = 96

    /// Reads back a file Reel has just written (MP4 or QuickTime): opens it from its header, checks
    /// every sample's place in the file against its size, and decodes each encoded video stream's
    /// first and last group of pictures (from a sync sample to the next one, and from the last one to
    /// the end; the frames no other frame refers to are skipped) and about two seconds at each end of
    /// every encoded audio stream, with error concealment off, so damage fails rather than being
    /// hidden. A stream `written` says was copied is never decoded (its data is the source's, which
    /// may be damaged in ways that abort FFmpeg's decoders): its index is compared with what was
    /// written instead, sample by sample (size, decode time, keyframe flag and the bytes at each end)
    /// when the muxer stores the codec unchanged. Without `written` every stream is decoded. Other
    /// streams' samples are skipped, not read. Throws `MediaError` when the file cannot be opened or
    /// read (its `code` says whether the cause was I/O); decoding failures and mismatches are
    /// reported in the result, not thrown.
    public static func readBack(path: String, written: [WrittenStream]? = nil) throws(MediaError) -> ReadBack {
        var clock = ReadBackClock()
        let input = try InputFile(path: path, policy: .standard, analysis: .headerSuffices)
        // The samples as stored, for the index and the decoding: an edit list (a Passthrough cut that
        // starts after its keyframe) makes the demuxer rebuild its index and hide samples, which
        // would otherwise be counted as missing frames. Starts and durations come from `input`.
        let stored = try InputFile(
            path: path, policy: .standard, analysis: .headerSuffices, demuxerOptions: [("ignore_editlist", "1")])
        var timings = ["opened in \(clock.lap())"]
        let context = input.context
        let fileBytes = input.info.fileBytes
        var streams: [ReadBack.Stream] = []
        for index in 0..<Int(context.pointee.nb_streams) {
            let stream = input.stream(index)
            // Kind and codec as the probe describes them (`InputFile.describe`).
            let described = input.info.streams[index]
            let kind = described.kind
            let timeBase = Rational(Int(stream.pointee.time_base.num), Int(stream.pointee.time_base.den))
            let storedStream = stored.stream(index)
            let entries = Int(avformat_index_get_entries_count(storedStream))
            var pastEnd = 0
            var keyframes: [Int] = []
            for position in 0..<entries {
                guard let entry = avformat_index_get_entry(storedStream, Int32(position)) else { continue }
                if entry.pointee.pos + Int64(entry.pointee.size & 0x3FFF_FFFF) > fileBytes { pastEnd += 1 }
                if entry.pointee.flags & AVINDEX_KEYFRAME != 0 { keyframes.append(position) }
            }
            let nopts = reel_nopts_value()
            let start = stream.pointee.start_time == nopts ? nil : Double(stream.pointee.start_time) * timeBase.value
            let duration =
                stream.pointee.duration == nopts || stream.pointee.duration <= 0
                ? nil : Double(stream.pointee.duration) * timeBase.value
            // The stored samples' own span (with an edit list's hidden lead-in), for the mean sample length.
            let storedSeconds =
                storedStream.pointee.duration == nopts || storedStream.pointee.duration <= 0
                ? nil : Double(storedStream.pointee.duration) * timeBase.value
            streams.append(
                ReadBack.Stream(
                    index: index, kind: kind, codec: described.codec,
                    startSeconds: start, durationSeconds: duration,
                    sampleSeconds: storedSeconds.flatMap { entries > 0 ? $0 / Double(entries) : nil }, samples: entries,
                    samplesPastEnd: pastEnd, decodedAtStart: 0, decodedAtEnd: 0, decodeFailure: nil))
            guard kind == .video || kind == .audio, entries > 0, pastEnd == 0 else { continue }
            if let copy = written?.first(where: { $0.index == index && $0.copied }) {
                if let table = copy.table {
                    streams[index].mismatch = try compare(storedStream, entries: entries, with: table, path: path)
                }
                timings.append("\(kind.rawValue) \(index): \(entries) samples compared in \(clock.lap())")
                continue
            }
            streams[index].decoded = true
            let (firstEnd, lastStart): (Int, Int)
            if kind == .video {
                firstEnd = keyframes.count > 1 ? keyframes[1] : entries
                lastStart = keyframes.last ?? 0
            } else {
                // Audio packets are all sync samples: about two seconds at each end (all of a short file).
                firstEnd = min(entries, audioPacketsChecked)
                lastStart = max(firstEnd, entries - audioPacketsChecked)
            }
            do throws(MediaError) {
                let decoder = try Decoder(stream: storedStream, index: index, strict: true)
                streams[index].decodedAtStart = try decode(
                    stored, stream: index, decoder: decoder, from: 0, to: firstEnd)
                if lastStart >= firstEnd, lastStart < entries {
                    avcodec_flush_buffers(decoder.context)
                    streams[index].decodedAtEnd = try decode(
                        stored, stream: index, decoder: decoder, from: lastStart, to: entries)
                } else {
                    streams[index].decodedAtEnd = streams[index].decodedAtStart
                }
            } catch
                where (error.kind == .unreadableInput || error.kind == .unsupportedCodec)
                && !error.isTransientIO
            {
                streams[index].decodeFailure = error.message
            }
            let frames = streams[index].decodedAtStart + streams[index].decodedAtEnd
            timings.append("\(kind.rawValue) \(index): \(frames) frames decoded in \(clock.lap())")
        }
        readBackLogger.debug("read back \(path): \(timings.joined(separator: "; ")); \(clock.total())")
        return ReadBack(fileBytes: fileBytes, streams: streams)
    }

    /// Compares a copied stream's index (the samples as stored) with what was written: the count,
    /// and each sample's size, keyframe flag, decode time (from the first) and the bytes at its ends.
    /// Returns the first difference, or nil.
    private static func compare(
        _ stream: UnsafeMutablePointer<AVStream>, entries: Int, with table: SampleTable, path: String
    ) throws(MediaError) -> String? {
        if entries != table.samples.count {
            return "it holds \(entries) samples, \(table.samples.count) were written"
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            throw MediaError(
                call: "open", code: reel_averror(errno), kind: .unreadableInput, context: "cannot read \(path)")
        }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 2 * SampleTable.edgeBytes)
        var window = PieceReader(
            fd: fd,
            pieces: (0..<entries).flatMap { position in
                avformat_index_get_entry(stream, Int32(position)).map {
                    SampleTable.edges(offset: $0.pointee.pos, size: Int($0.pointee.size & 0x3FFF_FFFF))
                } ?? []
            })
        var previousTimestamp: Int64 = 0
        for position in 0..<entries {
            guard let entry = avformat_index_get_entry(stream, Int32(position)) else {
                return "sample \(position) is missing from the index"
            }
            let wrote = table.samples[position]
            let size = Int(entry.pointee.size & 0x3FFF_FFFF)
            if size != Int(wrote.size) { return "sample \(position) has \(size) bytes, \(wrote.size) were written" }
            if (entry.pointee.flags & AVINDEX_KEYFRAME != 0) != wrote.keyframe {
                return "sample \(position) is \(wrote.keyframe ? "not " : "")a keyframe, unlike what was written"
            }
            // Decode-time gaps as written (where the packets had decode times; the muxer makes up
            // those that were missing).
            if position > 0, let dts = wrote.dts, let previous = table.samples[position - 1].dts,
                entry.pointee.timestamp - previousTimestamp != dts - previous
            {
                return "sample \(position) is decoded at another time than it was written for"
            }
            previousTimestamp = entry.pointee.timestamp
            var filled = 0
            for range in SampleTable.edges(offset: entry.pointee.pos, size: size) {
                guard try window.copy(range.count, at: range.offset, into: &buffer, from: filled, path: path) else {
                    return "sample \(position) lies past the end of the file"
                }
                filled += range.count
            }
            let fingerprint = buffer.withUnsafeBufferPointer { bytes in
                SampleTable.fingerprint(edges: bytes.baseAddress!, count: filled, size: size)
            }
            if fingerprint != wrote.fingerprint { return "sample \(position) does not hold the bytes written" }
        }
        return nil
    }

    /// Decodes samples `from..<to` of one stream (only its packets are read) and returns how many
    /// frames came out. Throws `.unreadableInput` with the reason when a packet is refused, a frame is
    /// marked corrupt, or fewer frames come out than went in (less the leading pictures a decoder may
    /// drop after a random-access point it did not start at); other kinds when the file cannot be read.
    private static func decode(
        _ input: InputFile, stream index: Int, decoder: Decoder, from: Int, to: Int
    ) throws(MediaError) -> Int {
        let context = input.context
        let stream = input.stream(index)
        for other in 0..<Int(context.pointee.nb_streams) {
            input.stream(other).pointee.discard = other == index ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
        guard let entry = avformat_index_get_entry(stream, Int32(from)) else {
            throw MediaError(kind: .unreadableInput, call: "avformat_index_get_entry", message: "no sample \(from)")
        }
        try check(
            avformat_seek_file(context, Int32(index), Int64.min, entry.pointee.timestamp, entry.pointee.timestamp, 0),
            "avformat_seek_file", kind: .unreadableInput, context: "cannot seek to sample \(from)")
        let packet = try Packet()
        let frame = try Frame()
        let disposable = DisposableFrames(stream.pointee.codecpar)
        var read = 0
        var sent = 0
        var decoded = 0
        var failure: String?
        func drain() throws(MediaError) {
            while true {
                switch try decoder.receive(frame) {
                case .produced:
                    if frame.pointer.pointee.flags & AV_FRAME_FLAG_CORRUPT != 0
                        || frame.pointer.pointee.decode_error_flags != 0
                    {
                        failure = failure ?? "frame \(from + decoded) is damaged"
                    }
                    decoded += 1
                    frame.unref()
                case .needsMoreInput, .endOfStream: return
                }
            }
        }
        while read < to - from {
            guard try input.read(into: packet) else { break }
            defer { packet.unref() }
            guard packet.streamIndex == index else { continue }
            read += 1
            if disposable?.contains(packet) == true { continue }
            var result = try decoder.send(packet)
            var attempts = 0
            while result == .full, attempts < 64 {
                try drain()
                result = try decoder.send(packet)
                attempts += 1
            }
            guard result == .accepted else {
                throw MediaError(
                    kind: .unreadableInput, call: "avcodec_send_packet",
                    message: "sample \(from + read - 1) does not decode")
            }
            sent += 1
            try drain()
        }
        _ = try decoder.send(nil)
        try drain()
        if let failure { throw MediaError(kind: .unreadableInput, call: "avcodec_receive_frame", message: failure) }
        if read < to - from {
            throw MediaError(
                kind: .unreadableInput, call: "av_read_frame",
                message: "only \(read) of samples \(from)..<\(to) could be read")
        }
        // A decoder started at a random-access point drops the leading pictures that refer to what
        // came before it (HEVC's RASL, an open GOP copied from a source, even at the start); an audio
        // decoder drops the frames the edit list trims (AAC's priming).
        let isVideo = stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
        let droppable = isVideo ? 8 : 2
        if decoded + droppable < sent {
            throw MediaError(
                kind: .unreadableInput, call: "avcodec_receive_frame",
                message: "samples \(from)..<\(to): \(sent) sent, \(decoded) decoded")
        }
        return decoded
    }
}

extension SampleTable {
    /// The bytes a sample's fingerprint covers, as file ranges: its first and last `edgeBytes` (all of
    /// a short sample).
    static func edges(offset: Int64, size: Int) -> [(offset: Int64, count: Int)] {
        size <= 2 * edgeBytes
            ? [(offset, size)] : [(offset, edgeBytes), (offset + Int64(size - edgeBytes), edgeBytes)]
    }
}

/// Reads the small pieces of a file the sample comparison needs (the ends of each sample), with
/// pieces that lie close together merged into one `pread`: the end of one video sample and the start
/// of the next (64 bytes), or a run of small audio samples read whole. On a 129 MB remux (1,800 video
/// and 2,812 audio samples, finely interleaved) 1.8 MB in 4,992 reads, where a read per piece was
/// 9,236 (0.3 MB) and an 8 KiB window 3,614 (29.5 MB); the comparison's CPU went from 14 to 9 ms.
private struct PieceReader {
    /// Pieces at most this far apart share a read, which reads at most `maxRead` bytes.
    static let maxGap: Int64 = 512
    static let maxRead: Int64 = 64 << 10
    let fd: Int32
    /// The merged reads, in the order the pieces will be asked for.
    private var reads: [Range<Int64>] = []
    private var nextRead = 0
    private var window: [UInt8] = []
    private var start: Int64 = 0
    private var valid = 0

    /// `pieces` in the order `copy` will be asked for them.
    init(fd: Int32, pieces: [(offset: Int64, count: Int)]) {
        self.fd = fd
        for piece in pieces {
            let range = piece.offset..<(piece.offset + Int64(max(piece.count, 0)))
            if let last = reads.last, range.lowerBound >= last.lowerBound,
                range.lowerBound <= last.upperBound + PieceReader.maxGap,
                range.upperBound - last.lowerBound <= PieceReader.maxRead
            {
                reads[reads.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                reads.append(range)
            }
        }
    }

    /// Copies `count` bytes from `offset` of the file into `buffer` at `from`; false when the file
    /// ends before them. Throws when the file cannot be read.
    mutating func copy(
        _ count: Int, at offset: Int64, into buffer: inout [UInt8], from: Int, path: String
    ) throws(MediaError) -> Bool {
        let piece = offset..<(offset + Int64(count))
        if piece.lowerBound < start || piece.upperBound > start + Int64(valid) {
            // The next merged read that holds the piece (the piece alone if none does).
            var range = piece
            while nextRead < reads.count {
                let candidate = reads[nextRead]
                nextRead += 1
                if candidate.lowerBound <= piece.lowerBound, candidate.upperBound >= piece.upperBound {
                    range = candidate
                    break
                }
            }
            if window.count < range.count { window = [UInt8](repeating: 0, count: range.count) }
            start = range.lowerBound
            let read = window.withUnsafeMutableBytes { bytes in
                pread(fd, bytes.baseAddress!, range.count, off_t(range.lowerBound))
            }
            if read < 0 {
                valid = 0
                throw MediaError(
                    call: "pread", code: reel_averror(errno), kind: .unreadableInput, context: "cannot read \(path)")
            }
            valid = read
            if piece.upperBound > start + Int64(valid) { return false }
        }
        let skip = Int(offset - start)
        buffer.withUnsafeMutableBufferPointer { target in
            window.withUnsafeBufferPointer { source in
                (target.baseAddress! + from).update(from: source.baseAddress! + skip, count: count)
            }
        }
        return true
    }
}

/// Recognises H.264 and HEVC samples that no other frame refers to (`nal_ref_idc` 0; HEVC's
/// sub-layer non-reference types), which verification skips: they cannot make another frame
/// undecodable, and they are half of x264's frames. Only for length-prefixed samples (`avcC`/`hvcC`
/// extradata), which is what MP4 and QuickTime hold.
struct DisposableFrames {
    private let isHEVC: Bool
    private let lengthSize: Int

    init?(_ parameters: UnsafeMutablePointer<AVCodecParameters>) {
        let codec = parameters.pointee.codec_id
        guard codec == AV_CODEC_ID_H264 || codec == AV_CODEC_ID_HEVC, let extradata = parameters.pointee.extradata
        else { return nil }
        let size = Int(parameters.pointee.extradata_size)
        isHEVC = codec == AV_CODEC_ID_HEVC
        // avcC: version 1, then lengthSizeMinusOne in byte 4; hvcC: version 1, in byte 21.
        let position = isHEVC ? 21 : 4
        guard size > position, extradata[0] == 1 else { return nil }
        lengthSize = Int(extradata[position] & 3) + 1
    }

    /// Whether the sample's first slice says no other frame refers to it.
    func contains(_ packet: Packet) -> Bool {
        guard let data = packet.pointer.pointee.data else { return false }
        let size = Int(packet.pointer.pointee.size)
        var offset = 0
        while offset + lengthSize < size {
            var length = 0
            for byte in 0..<lengthSize { length = length << 8 | Int(data[offset + byte]) }
            offset += lengthSize
            guard length > 0, offset + length <= size else { return false }
            let header = data[offset]
            if isHEVC {
                let type = Int(header >> 1) & 0x3F
                if type < 32 { return type <= 14 && type % 2 == 0 }
            } else {
                let type = Int(header & 0x1F)
                if (1...5).contains(type) { return header & 0x60 == 0 }
            }
            offset += length
        }
        return false
    }
}

/// Wall and CPU time of the read-back's steps, for its debug log line (`--verbose`). CPU time is the
/// process's (all threads: the decoder's own threads are where the work is).
private struct ReadBackClock {
    private let start = ReadBackClock.now()
    private var last: (wall: Double, cpu: Double)

    init() { last = start }

    /// Wall (and CPU) milliseconds since the last lap.
    mutating func lap() -> String {
        let now = ReadBackClock.now()
        defer { last = now }
        return ReadBackClock.format(from: last, to: now)
    }

    func total() -> String { "total " + ReadBackClock.format(from: start, to: ReadBackClock.now()) }

    private static func format(from: (wall: Double, cpu: Double), to: (wall: Double, cpu: Double)) -> String {
        String(format: "%.0f ms (CPU %.0f ms)", (to.wall - from.wall) * 1000, (to.cpu - from.cpu) * 1000)
    }

    private static func now() -> (wall: Double, cpu: Double) {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        return (ProcessInfo.processInfo.systemUptime, cpu)
    }
}
