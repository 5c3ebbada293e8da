internal import CFFmpeg

/// An adaptive-streaming ladder as plain values: one source decoded once, scaled to every rung,
/// each rung encoded (H.264, or HEVC keeping 10-bit HDR) into its own CMAF track, and one AAC
/// rendition. Decided by the caller (ReelExport); ReelMedia only executes it (`LadderTranscoder`).
/// Paths are absolute.
public struct LadderPlan: Sendable {
    public var inputPath: String
    /// When set, the input is these bytes of `inputPath` (`TranscodePlan.inputByteRange`).
    public var inputByteRange: Range<Int64>? = nil
    /// An existing, empty folder: each track gets a sub-folder (`v0`, `v1`, …, `a`) of its own.
    public var outputFolder: String
    /// The source's video stream.
    public var videoStream: Int
    /// The rungs, largest first. The first decides the decode (rotation, mirroring, colour, frame
    /// rate cap) and is encoded from the decoded frames as they are; every other rung is scaled from
    /// them. Each must have `alignedKeyframes`, and all the same codec (8-bit H.264, HEVC or AV1),
    /// depth and colour: HEVC or AV1 rungs keeping the source's colours are 10-bit HDR (Main 10
    /// `hvc1`, or `av01` Main).
    public var rungs: [VideoEncoding]
    /// SDR rungs beside HDR ones (Apple's HLS authoring rules ask for both), largest first: 8-bit
    /// H.264 with aligned keyframes, all `.toneMapped` by one mapping, in a ladder whose `rungs` are
    /// HEVC or AV1 keeping an HLG or PQ source's colours. From the same decode: the first rung's pictures
    /// (upright, at its size) are tone-mapped once, by the `ToneMapper` the H.264 exports use, at the
    /// first SDR rung's size (converted to 10-bit BT.2020 at that size first when they are not
    /// already), and every other SDR rung is scaled from that SDR picture. Their tracks follow the
    /// HDR rungs' in the outcome, in folders `s0`, `s1`, …. Empty: none.
    public var sdrRungs: [VideoEncoding] = []
    /// The audio rendition (nil for none).
    public var audio: StreamEncoding<AudioEncoding>?
    /// Segment length: an IDR is forced on the first frame at or after every multiple of it, in
    /// every rung, and each segment starts there.
    public var segmentSeconds: Double
    public var startSeconds: Double?
    public var endSeconds: Double?
    public var policy: InputPolicy
    /// The core budget (`TranscodePlan.threads`): 0 for every core, 1 for one.
    public var threads: Int
    /// Tests only, honoured in debug builds alone (release builds ignore it): the last rung's
    /// encoder fails as it is given this frame (counted from 1), as x264 or x265 failing mid-run
    /// would. Nil for none.
    public var rungFault: Int? = nil

    public init(
        inputPath: String, outputFolder: String, videoStream: Int, rungs: [VideoEncoding],
        audio: StreamEncoding<AudioEncoding>?, segmentSeconds: Double, policy: InputPolicy = .standard,
        threads: Int = 0
    ) {
        self.inputPath = inputPath
        self.outputFolder = outputFolder
        self.videoStream = videoStream
        self.rungs = rungs
        self.audio = audio
        self.segmentSeconds = segmentSeconds
        self.policy = policy
        self.threads = max(0, threads)
    }
}

/// One track of a finished ladder: its folder, its files and what a playlist says of it.
public struct LadderTrack: Sendable, Equatable {
    /// One media segment as written.
    public struct Segment: Sendable, Equatable {
        /// File name inside the track's folder.
        public var file: String
        public var bytes: Int64
        /// Where its first packet is presented, in seconds from the export's start.
        public var startSeconds: Double
        /// Up to the next segment's start (the last: to the end of its last packet; audio: at most
        /// to the video's end).
        public var durationSeconds: Double
        /// Packets (samples) written into it.
        public var samples: Int
    }
    /// The init segment and the media segments.
    public struct Segments: Sendable, Equatable {
        public var initFile: String
        public var initBytes: Int64
        public var segments: [Segment]
    }
    /// The folder, relative to the ladder's (`v0`, `a`).
    public var folder: String
    public var files: Segments
    /// The RFC 6381 codec string of what was written: `avc1.PPCCLL` or `hvc1.P.C.TL.B` from the
    /// stream's SPS (`CodecString`), or `mp4a.40.2`.
    public var codecs: String
    public var width: Int?
    public var height: Int?
    public var frameRate: Double?
    public var channels: Int?
    public var sampleRate: Int?
    /// A video track's HLS VIDEO-RANGE, from the transfer its stream is tagged with: `PQ` (SMPTE ST
    /// 2084), `HLG` (ARIB STD-B67), else `SDR`.
    public var videoRange: String? = nil
    /// A video track's colour tags as ISO/IEC 23091-2 (CICP) code points, as its stream is tagged.
    public var colour: Colour? = nil

    /// Colour primaries, transfer characteristics and matrix coefficients (CICP code points: 1 is
    /// BT.709; 9 BT.2020; 16 PQ, 18 HLG).
    public struct Colour: Sendable, Equatable {
        public var primaries: Int
        public var transfer: Int
        public var matrix: Int
    }
}

extension LadderTrack.Colour {
    /// FFmpeg's colour enumerations are the CICP code points.
    init(_ parameters: AVCodecParameters) {
        self.init(
            primaries: Int(parameters.color_primaries.rawValue), transfer: Int(parameters.color_trc.rawValue),
            matrix: Int(parameters.color_space.rawValue))
    }
}

/// What a ladder produced.
public struct LadderOutcome: Sendable {
    /// One track per rung, in the plan's order: `rungs`, then `sdrRungs`.
    public var video: [LadderTrack]
    public var audio: LadderTrack?
    /// Frames decoded and sent to the rungs.
    public var frames: Int
    /// The most rungs whose encoders ran at once on threads of their own (`RungThreads`, a ladder of
    /// HEVC rungs, with its SDR rungs if any, on two cores or more); 0 when every rung was encoded on
    /// the fan-out thread.
    public var mostEncodingAtOnce = 0
}
