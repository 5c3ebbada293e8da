internal import CFFmpeg
import ReelSystem

/// How to encode the video track. Decided by the caller (ReelExport); ReelMedia only executes it.
public struct VideoEncoding: Sendable, Equatable {
    public enum Codec: String, Sendable, Codable {
        case h264, hevc, av1
        /// The FFmpeg encoder Reel uses for this codec.
        public var encoderName: String {
            switch self {
            case .h264: "libx264"
            case .hevc: "libx265"
            case .av1: "libsvtav1"
            }
        }
        /// Whether this codec's presets may keep a 10-bit source's depth, and with it HDR (HEVC Main
        /// 10, AV1 Main at 10 bits); H.264 presets are 8-bit.
        public var keepsHighBitDepth: Bool { self != .h264 }
        /// The sample entry Apple players and browsers want in MP4/QuickTime (`hvc1` for HEVC, whose
        /// muxer default is `hev1`; `av01`, the only one AV1 has), or nil for the muxer's own.
        public var sampleEntry: String? {
            switch self {
            case .h264: nil
            case .hevc: "hvc1"
            case .av1: "av01"
            }
        }
    }
    /// What colours the output carries.
    public enum Color: Sendable, Equatable {
        /// Convert the matrix to BT.709, limited range (SDR web video from an SDR source).
        case bt709
        /// Keep the source's matrix, primaries and transfer, limited range (HDR in HEVC presets), and
        /// write `hdrMetadata` when there is some.
        case keepSource
        /// Tone-map an HLG or PQ source to SDR BT.709, limited range, 8-bit (ITU-R BT.2408).
        case toneMapped(ToneMapping)
    }
    public var codec: Codec
    /// Output size after rotation, in pixels (square unless `pixelAspect` says otherwise); both even.
    public var width: Int
    public var height: Int
    /// The shape of a pixel (width over height, the sample aspect ratio): 1:1 unless the size grid
    /// forced a picture whose proportions differ from the source's, which this restores on display.
    public var pixelAspect = Rational(1, 1)
    /// Clockwise degrees (0, 90, 180, 270) to rotate the decoded pixels by.
    public var rotation: Int
    /// Mirror the decoded pixels left to right before rotating them (a display matrix with a flip).
    public var mirrored: Bool
    /// 10-bit output (HEVC Main 10, AV1 Main at 10 bits) instead of 8-bit.
    public var tenBit: Bool
    public var color: Color
    /// x264/x265 `preset` (speed/efficiency trade-off); for SVT-AV1 its number, 0 (slowest) to 13.
    public var encoderPreset: String
    /// Constant rate factor.
    public var crf: Double
    /// VBV cap in bits per second, and buffer size in bits (both or neither).
    public var maxBitrate: Int?
    public var bufferSize: Int?
    /// Frames closer together than 1/maxFrameRate are dropped; nil keeps every frame.
    public var maxFrameRate: Double?
    /// Codec profile (`high`, `main`, `main10`).
    public var profile: String?
    /// HDR10 static metadata for the output (with `.keepSource`): written into the HEVC SEI and the
    /// MP4 (`mdcv`, `clli`). Nil writes none.
    public var hdrMetadata: HDRStaticMetadata?
    /// The colour (0xRRGGBB) transparent pixels (GIF, APNG) are flattened onto.
    public var background: UInt32 = 0
    /// At most this many frames between keyframes (the encoder's `keyint`); nil keeps the encoder's
    /// default (250 for x264 and x265).
    public var keyframeInterval: Int?
    /// Keyframes only where the caller forces them (a frame whose `pict_type` is I becomes an IDR)
    /// and at `keyframeInterval`, never at scene cuts: every rung of a ladder then has its IDRs at
    /// the same times. x264, x265 and SVT-AV1.
    public var alignedKeyframes = false

    public init(
        codec: Codec, width: Int, height: Int, rotation: Int, mirrored: Bool = false, tenBit: Bool, color: Color,
        encoderPreset: String, crf: Double, maxBitrate: Int?, bufferSize: Int?, maxFrameRate: Double?,
        profile: String?, hdrMetadata: HDRStaticMetadata? = nil
    ) {
        self.codec = codec
        self.width = width
        self.height = height
        self.rotation = rotation
        self.mirrored = mirrored
        self.hdrMetadata = hdrMetadata
        self.tenBit = tenBit
        self.color = color
        self.encoderPreset = encoderPreset
        self.crf = crf
        self.maxBitrate = maxBitrate
        self.bufferSize = bufferSize
        self.maxFrameRate = maxFrameRate
        self.profile = profile
    }
}

/// How to encode the audio track (always AAC-LC).
public struct AudioEncoding: Sendable, Equatable {
    public var bitrate: Int
    public var channels: Int
    public var sampleRate: Int
    public init(bitrate: Int, channels: Int, sampleRate: Int) {
        self.bitrate = bitrate
        self.channels = channels
        self.sampleRate = sampleRate
    }
}

/// The container to write.
public struct Container: Sendable, Equatable {
    /// FFmpeg muxer name (`mp4` or `mov`).
    public var muxer: String
    /// Major brand override (`M4V `, `M4A `), or nil for the muxer's own.
    public var brand: String?
    public init(muxer: String, brand: String? = nil) {
        self.muxer = muxer
        self.brand = brand
    }
}

/// One source stream and how to re-encode it.
public struct StreamEncoding<Encoding: Sendable & Equatable>: Sendable, Equatable {
    /// The source stream's index.
    public var stream: Int
    public var encoding: Encoding
    public init(stream: Int, encoding: Encoding) {
        self.stream = stream
        self.encoding = encoding
    }
}

/// Everything one export needs, as plain values. Paths are absolute.
public struct TranscodePlan: Sendable {
    /// What an export does with the source's streams.
    public enum Mode: Sendable, Equatable {
        /// Decode and re-encode the video stream, the audio stream, or both (nil leaves one out).
        case transcode(video: StreamEncoding<VideoEncoding>?, audio: StreamEncoding<AudioEncoding>?)
        /// Copy these streams' packets unchanged (remux).
        case copy(streams: [Int])
    }

    public var inputPath: String
    /// When set, the input is these bytes of `inputPath` (a Motion Photo's embedded MP4), read in
    /// place through FFmpeg's `subfile` protocol: nothing outside the range is read, nothing is copied.
    public var inputByteRange: Range<Int64>? = nil
    /// Where to write; must not exist. The caller renames it into place.
    public var outputPath: String
    public var container: Container
    /// Moov atom first (`movflags=+faststart`).
    public var faststart: Bool
    /// Container metadata to write (creation time, location, make/model, …).
    public var metadata: [String: String]
    /// Optional time range within the source, in seconds from its start.
    public var startSeconds: Double?
    public var endSeconds: Double?
    public var mode: Mode
    public var policy: InputPolicy
    /// Threads the video decoder and encoder may each use (the scaler always uses one): 0 lets them
    /// choose (every core; x264 takes 1.5 per core); 1 keeps them single-threaded, for a worker that
    /// runs one job per core, where frame threads would only add synchronisation and memory.
    public var threads: Int
    /// Take a poster from the video as it is encoded: the first frame at or after this many seconds
    /// into the export, as a JPEG of `posterQuality` (`TranscodeOutcome.poster`). Taken only when the
    /// frames are 8-bit BT.709 with square pixels (`PosterGrab`); nil takes none.
    public var posterSeconds: Double?
    public var posterQuality = 90
    /// Score the encoded video against the frames sent to the encoder as it is encoded (its packets
    /// decoded beside the encoder): `TranscodeOutcome.quality`.
    public var measuresQuality = false

    public init(
        inputPath: String, outputPath: String, container: Container, mode: Mode, faststart: Bool = true,
        metadata: [String: String] = [:], startSeconds: Double? = nil, endSeconds: Double? = nil,
        policy: InputPolicy = .standard, threads: Int = 0
    ) {
        self.threads = max(0, threads)
        self.inputPath = inputPath
        self.outputPath = outputPath
        self.container = container
        self.mode = mode
        self.faststart = faststart
        self.metadata = metadata
        self.startSeconds = startSeconds
        self.endSeconds = endSeconds
        self.policy = policy
    }
}

/// Where an export is.
public struct TranscodeProgress: Sendable, Equatable {
    public enum Phase: String, Sendable, Codable, CaseIterable {
        /// Fetching a remote asset before it is read: `fraction` is then the share of its bytes received.
        case downloading
        /// Encoding samples to find the CRF that meets a quality target (`QualitySearch`):
        /// `fraction` is the share of the search done.
        case searching
        /// Reading, decoding, encoding and writing packets.
        case transcoding
        /// Writing the trailer; with faststart, moving the index in front of the media data.
        case finalizing
        /// Sending the verified output to its URL (`-o https://…`): `fraction` is the share of its
        /// bytes sent.
        case uploading
    }
    public var phase: Phase
    /// 0…1 over the whole export, including finalizing.
    public var fraction: Double
    /// Output frames encoded (or packets copied) so far.
    public var frames: Int
    /// Seconds of media processed so far.
    public var mediaSeconds: Double
    /// A ladder's renditions, each on its own (empty for other exports): the rungs in the plan's
    /// order (`rungs`, then `sdrRungs`), then the audio.
    public var renditions: [Rendition] = []

    public init(
        phase: Phase, fraction: Double, frames: Int, mediaSeconds: Double, renditions: [Rendition] = []
    ) {
        self.phase = phase
        self.fraction = fraction
        self.frames = frames
        self.mediaSeconds = mediaSeconds
        self.renditions = renditions
    }

    /// How far one rendition of a ladder is: its encoder's output, not the decode feeding it.
    public struct Rendition: Sendable, Equatable {
        /// Its folder inside the ladder's (`v0`, `v1`, …, SDR rungs beside HDR ones `s0`, …, `a`).
        public var name: String
        public var width: Int?
        public var height: Int?
        /// 0…1: the media written to its track over the export's duration; 1 once its segments are
        /// split out.
        public var fraction: Double
    }
}

/// What an export produced.
public struct TranscodeOutcome: Sendable {
    /// Bytes of the finished file.
    public var bytes: Int64
    /// Video frames encoded (0 when copying).
    public var videoFramesEncoded: Int
    /// Audio frames encoded (0 when copying).
    public var audioFramesEncoded: Int
    /// Packets copied unchanged (0 when re-encoding).
    public var packetsCopied: Int
    /// What went into each stream of the file, as it was written: what verification holds it to.
    public var written: [WrittenStream] = []
    /// Holds the file's lock (`OutputLock`) until the caller has published or removed it.
    public var lock: OutputLock? = nil
    /// The file's closing fsync when it is still running (a remux: `BackgroundSync`); the caller
    /// must `wait()` for it before publishing the file. Nil when the file was synced already.
    public var sync: PendingSync? = nil
    /// The poster JPEG `TranscodePlan.posterSeconds` asked for, when it could be taken from the
    /// encoded frames; nil otherwise.
    public var poster: [UInt8]? = nil
    /// Seconds spent opening and probing the input for the pipeline (`InputFile`).
    public var openSeconds: Double = 0
    /// Seconds spent draining the video encoder at the end (the frames its lookahead held back)
    /// and writing the trailer (the faststart rewrite): the tail no more input shortens.
    public var flushSeconds: Double = 0
    /// The encoded video's quality against the frames the encoder was given (SSIM, PSNR), when
    /// `TranscodePlan.measuresQuality` asked for it.
    public var quality: QualityScore? = nil
}

extension VideoEncoding {
    /// `pixelAspect` as FFmpeg's sample aspect ratio (1:1 when it is not a valid ratio).
    var avPixelAspect: AVRational {
        guard pixelAspect.isValid, let num = Int32(exactly: pixelAspect.numerator),
            let den = Int32(exactly: pixelAspect.denominator)
        else { return AVRational(num: 1, den: 1) }
        return AVRational(num: num, den: den)
    }
}
