internal import CFFmpeg
internal import CFFmpegShim

/// How long a frame, an audio packet or a copied sample lasts: the one rule that the exporter (the
/// durations it writes) and the verifier (what it expects the file to hold) share, so the two cannot
/// disagree.
///
/// A frame is shown until the next one of its stream is. The last one lasts its own duration as the
/// source gives it (its packet's: a GIF's delay, a held frame, an audio packet's samples) or, when the
/// source gives none, one frame at the stream's nominal rate. A stream therefore ends where its last
/// frame ends, never where a container header says it does (FLV metadata, an ASF header, an MPEG-PS
/// estimate and an Ogg granule can all be wrong; ffmpeg ignores them too). The decode stage gives
/// each frame its own duration, the encode stage and the remux write packets with these durations,
/// and `WrittenStreamRecorder` measures from them what verification then expects of the file.
enum FrameTiming {
    /// The duration of a sample whose successor is not known (the last one), in its time base:
    /// `own` when positive, else `nominal` (one frame at the nominal rate), else 0.
    static func duration(own: Int64, nominal: Int64) -> Int64 {
        own > 0 ? own : max(0, nominal)
    }

    /// One frame at `rate` frames a second, in `timeBase`; 0 when the rate is unknown.
    static func nominal(rate: AVRational, timeBase: AVRational) -> Int64 {
        guard rate.num > 0, rate.den > 0, timeBase.num > 0, timeBase.den > 0 else { return 0 }
        return max(1, av_rescale_q(1, av_inv_q(rate), timeBase))
    }

    /// One audio packet (`frameSize` samples at `sampleRate`), in `timeBase`; 0 when unknown.
    static func nominal(frameSize: Int32, sampleRate: Int32, timeBase: AVRational) -> Int64 {
        guard frameSize > 0, sampleRate > 0, timeBase.num > 0, timeBase.den > 0 else { return 0 }
        return max(1, av_rescale_q(Int64(frameSize), AVRational(num: 1, den: sampleRate), timeBase))
    }
}

/// What an export wrote into one stream of its output, measured as the packets went to the muxer:
/// the facts verification holds the file to (`MediaProbe.readBack(path:written:)`), instead of
/// durations the source's container declares.
public struct WrittenStream: Sendable, Equatable {
    /// The output stream's index.
    public var index: Int
    public var kind: StreamKind
    /// Copied from the source (its packets unchanged) rather than encoded by Reel.
    public var copied: Bool
    /// Samples written (packets with data; the muxer drops empty ones).
    public var samples: Int
    /// Presentation time of the first sample on the output's clock, in seconds (0 at the earliest: a
    /// lead-in before zero, such as AAC's priming or a cut's frames before its start, is hidden by the
    /// edit list), or nil when no sample had a time.
    public var startSeconds: Double?
    /// Where the last frame ends (`FrameTiming`), as an MP4 reader will find it, in seconds, or nil
    /// when no sample had a time.
    public var endSeconds: Double?
    /// Each sample as written, in decode order, when the muxer stores packets of this codec
    /// unchanged (`SampleTable.storesUnchanged`): the read-back compares the file's index and bytes
    /// with it. Nil for encoded streams and for codecs the muxer rewrites (Annex B H.264, ADTS AAC, …).
    var table: SampleTable?

    /// Whether each sample was recorded as written (`table`): the read-back compares the file's
    /// index with it sample by sample, and the muxer keeps one sample per packet.
    public var recordsEachSample: Bool { table != nil }

    /// Seconds from the first sample's start to the last one's end.
    public var durationSeconds: Double? {
        guard let startSeconds, let endSeconds else { return nil }
        return max(0, endSeconds - startSeconds)
    }
}

/// The samples of one stream as they were handed to the muxer, for a copy the muxer stores
/// unchanged: size, decode time, keyframe flag and a fingerprint of the first and last bytes.
struct SampleTable: Sendable, Equatable {
    struct Sample: Sendable, Equatable {
        var size: Int32
        var keyframe: Bool
        /// Nil when the packet had none (Matroska's first B-frame packets): the muxer makes one up.
        var dts: Int64?
        var fingerprint: UInt64
    }
    var samples: [Sample] = []

    /// Bytes at each end of a sample that its fingerprint covers: a wrong offset in the index, a
    /// sample cut short or data overwritten at a sample's edge changes it.
    static let edgeBytes = 32

    /// The fingerprint of a whole sample of `size` bytes: FNV-1a over its first and last
    /// `edgeBytes` (all of it when shorter), mixed with its size.
    static func fingerprint(sample bytes: UnsafePointer<UInt8>, size: Int) -> UInt64 {
        var hash = offsetBasis
        if size <= 2 * edgeBytes {
            mix(&hash, bytes, 0..<size)
        } else {
            mix(&hash, bytes, 0..<edgeBytes)
            mix(&hash, bytes, (size - edgeBytes)..<size)
        }
        return hash ^ UInt64(size)
    }

    /// The same fingerprint from `edges` (the first and last `edgeBytes` of a sample of `size`
    /// bytes, one after the other, or all of a short one), as read back from a file.
    static func fingerprint(edges: UnsafePointer<UInt8>, count: Int, size: Int) -> UInt64 {
        var hash = offsetBasis
        mix(&hash, edges, 0..<count)
        return hash ^ UInt64(size)
    }

    private static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    private static func mix(_ hash: inout UInt64, _ bytes: UnsafePointer<UInt8>, _ range: Range<Int>) {
        for index in range { hash = (hash ^ UInt64(bytes[index])) &* 0x0000_0100_0000_01B3 }
    }

    /// Whether FFmpeg 5.1's MP4/QuickTime muxer stores this stream's packets exactly as it is given
    /// them, one sample per packet. It does not for H.264 and HEVC in Annex B (converted to length
    /// prefixes), AAC with ADTS headers (stripped by `aac_adtstoasc`), AV1 (temporal delimiters
    /// dropped), VP9 (`vp9_superframe` merges frames), E-AC-3 and TrueHD (several packets a sample).
    static func storesUnchanged(_ parameters: UnsafePointer<AVCodecParameters>, firstPacket: Packet) -> Bool {
        let codec = parameters.pointee.codec_id
        let extradata = parameters.pointee.extradata
        let size = Int(parameters.pointee.extradata_size)
        switch codec {
        case AV_CODEC_ID_H264:
            // avcC starts with version 1; Annex B with a start code.
            return size > 0 && extradata?[0] == 1
        case AV_CODEC_ID_HEVC:
            // hvcC's first byte is its version (1); Annex B starts 00 00 01 or 00 00 00 01.
            guard size > 6, let extradata else { return false }
            return !(extradata[0] == 0 && extradata[1] == 0 && (extradata[2] == 1 || extradata[2] == 0))
        case AV_CODEC_ID_AAC:
            guard let data = firstPacket.pointer.pointee.data, firstPacket.pointer.pointee.size >= 2 else {
                return false
            }
            return !(data[0] == 0xFF && data[1] & 0xF0 == 0xF0)
        case AV_CODEC_ID_AV1, AV_CODEC_ID_VP9, AV_CODEC_ID_EAC3, AV_CODEC_ID_TRUEHD:
            return false
        default:
            return true
        }
    }
}

/// Accumulates a `WrittenStream` from the packets handed to the muxer, in the output stream's time
/// base (see `OutputFile.write`).
struct WrittenStreamRecorder {
    let index: Int
    let kind: StreamKind
    let copied: Bool
    let timeBase: AVRational
    /// Samples an encoder puts before the first real one (AAC's priming), in the stream's time base.
    let leadIn: Int64
    /// One frame at the nominal rate, for a last packet without a duration.
    let nominal: Int64
    private(set) var samples = 0
    /// The earliest presentation time, and the first and last decode times with the last duration.
    private var minPts: Int64?
    private var maxEnd: Int64?
    private var firstDts: Int64?
    private var lastDts: Int64 = 0
    private var lastDuration: Int64 = 0
    private var clip: Int64?
    private var missingDts = false
    /// Nil until the first packet says whether the muxer stores this codec unchanged.
    private var table: SampleTable?
    private var decidedTable = false
    private let parameters: UnsafePointer<AVCodecParameters>

    init(stream: UnsafeMutablePointer<AVStream>, kind: StreamKind, copied: Bool) {
        index = Int(stream.pointee.index)
        self.kind = kind
        self.copied = copied
        timeBase = stream.pointee.time_base
        let parameters = stream.pointee.codecpar!
        self.parameters = UnsafePointer(parameters)
        let sampleRate = parameters.pointee.sample_rate
        // An encoder's priming (AAC: 1024 samples) comes first with its own timestamps; a copy's
        // timestamps already place its lead-in before zero.
        leadIn =
            !copied && kind == .audio && sampleRate > 0 && parameters.pointee.initial_padding > 0
            ? av_rescale_q(
                Int64(parameters.pointee.initial_padding), AVRational(num: 1, den: sampleRate), stream.pointee.time_base
            )
            : 0
        switch kind {
        case .video:
            nominal = FrameTiming.nominal(rate: stream.pointee.avg_frame_rate, timeBase: stream.pointee.time_base)
        case .audio:
            nominal = FrameTiming.nominal(
                frameSize: parameters.pointee.frame_size, sampleRate: sampleRate, timeBase: stream.pointee.time_base)
        default:
            nominal = 0
        }
    }

    /// Records one packet (its timestamps already in the stream's time base), before the muxer takes it.
    mutating func record(_ packet: Packet) {
        let raw = packet.pointer.pointee
        guard raw.size > 0 else { return }
        samples += 1
        let pts = sane(raw.pts)
        let duration = FrameTiming.duration(own: raw.duration, nominal: nominal)
        if let pts {
            minPts = min(minPts ?? pts, pts)
            maxEnd = max(maxEnd ?? pts + duration, pts + duration)
        }
        if let dts = sane(raw.dts) {
            firstDts = firstDts ?? dts
            lastDts = dts
            lastDuration = duration
        } else {
            // The muxer makes a decode time up: the samples' decode-time span is not known here.
            missingDts = true
        }
        guard copied else { return }
        if !decidedTable {
            decidedTable = true
            if SampleTable.storesUnchanged(parameters, firstPacket: packet) { table = SampleTable() }
        }
        if table != nil, let data = raw.data {
            table!.samples.append(
                SampleTable.Sample(
                    size: raw.size, keyframe: raw.flags & AV_PKT_FLAG_KEY != 0, dts: sane(raw.dts),
                    fingerprint: SampleTable.fingerprint(sample: data, size: Int(raw.size))))
        }
    }

    /// Trims the stream's end to `seconds` (a Passthrough cut, whose edit list ends there).
    mutating func clipEnd(toSeconds seconds: Double) {
        clip = Int64((seconds * Double(timeBase.den) / Double(timeBase.num)).rounded())
    }

    /// The stream as written, as an MP4 reader will find it. FFmpeg's MP4 muxer (5.1) stores the
    /// track's length as the latest pts plus its packet's duration, and the samples' durations as
    /// their decode-time gaps plus the last packet's duration; a reader (FFmpeg's, as ffprobe) takes
    /// the shorter. A lead-in before zero (a cut's frames before its start, an encoder's priming) is
    /// hidden by the edit list.
    var written: WrittenStream {
        let scale = { (value: Int64) in Double(value) * Double(timeBase.num) / Double(timeBase.den) }
        var end: Int64?
        if let maxEnd { end = maxEnd }
        if let minPts, let current = end, let firstDts, !missingDts {
            end = min(current, minPts + (lastDts + lastDuration - firstDts))
        }
        if let clip, let current = end { end = min(current, clip) }
        return WrittenStream(
            index: index, kind: kind, copied: copied, samples: samples,
            startSeconds: minPts.map { max(0, scale($0 + leadIn)) }, endSeconds: end.map(scale), table: table)
    }
}
