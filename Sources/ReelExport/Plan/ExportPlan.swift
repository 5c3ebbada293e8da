public import ReelMedia

/// What an export will do, decided before any work: how the file is made and why, its container,
/// size and rates, what happens to each stream, and how large the file will be.
///
/// `ExportSession.determineCompatibility()` returns it and `reel export --estimate --json` prints it.
/// A value, so it can be stored, compared and sent; the session turns it into ReelMedia's plan only
/// when it runs.
public struct ExportPlan: Sendable, Codable, Equatable {
    /// The asset's path.
    public var asset: String
    /// The bytes of `asset` the media occupies, when it is part of a larger file (a Motion Photo's
    /// embedded video, read in place); nil for the whole file.
    public var assetByteRange: ByteRange? = nil
    /// The preset's canonical name.
    public var preset: String
    public var method: ExportMethod
    public var decision: Decision
    public var output: Output
    /// Output picture size, when there is video (`video.pixelAspect` says when its pixels are not square).
    public var width: Int?
    public var height: Int?
    /// Output frames per second after the preset's cap (the source's for a copy), when there is video.
    public var frameRate: Double?
    /// Seconds of the source the output covers (the time range's length when there is one).
    public var durationSeconds: Double
    /// The part of the source exported: the requested range with its end clamped to the asset's
    /// duration (an open end made explicit), as `AVAssetExportSession` does; nil for all of it.
    public var timeRange: TimeRange?
    /// The range as it was asked for, when one was (it differs from `timeRange` when it ended past the
    /// asset or was open-ended).
    public var requestedTimeRange: TimeRange? = nil
    /// Where a Passthrough cut's copy starts in the source (the keyframe at or before the range's
    /// start), when the source's index says; the edit list hides what lies before the range.
    public var copiedFromSeconds: Double? = nil
    /// The video track's path through the export; nil when the output has no video.
    public var video: Video?
    /// The audio track's path through the export; nil when the output has no audio.
    public var audio: Audio?
    /// Every stream of the asset and what becomes of it.
    public var streams: [Stream]
    public var metadata: Metadata
    /// The size the output file is expected to have, in bytes (see `SizeEstimate`); with a size
    /// limit, at most the limit.
    public var estimatedBytes: Int64
    /// How the export fits a file size limit, when one was given (`fileLengthLimit`, `--max-size`).
    public var sizeLimit: SizeLimit? = nil
    /// How `estimatedBytes` was found; nil in plans written before the method was recorded.
    public var estimateMethod: EstimateMethod? = nil
    /// The encodes a measured estimate comes from (`ExportSession.measuredPlan()`); nil otherwise.
    public var estimateSamples: EstimateSamples? = nil
    /// How the video meets a quality target, when one was set (`ExportSession.qualityTarget`);
    /// nil otherwise, and for copies.
    public var quality: QualityPlan? = nil

    /// Where `estimatedBytes` comes from.
    public enum EstimateMethod: String, Sendable, Codable {
        /// A copy: the source's bytes for the streams and the duration kept. No frame is read.
        case copy
        /// A re-encode: `SizeEstimate`'s model of the encoder from the source's probed facts. No
        /// frame is read; content unlike the model's calibration can miss by half or more.
        case model
        /// Short encodes at the plan's own settings, spread over the duration, extrapolated.
        case samples
        /// The whole export encoded once (an export no longer than the samples would be).
        case encoded
    }

    /// The encodes a measured estimate extrapolates.
    public struct EstimateSamples: Sendable, Codable, Equatable {
        /// Encodes made (1 when the whole export was encoded).
        public var count: Int
        /// Seconds of output they hold, together.
        public var seconds: Double
        /// Bytes they wrote, together.
        public var bytes: Int64
        /// Wall time they took, in seconds.
        public var elapsedSeconds: Double

        public init(count: Int, seconds: Double, bytes: Int64, elapsedSeconds: Double) {
            self.count = count
            self.seconds = seconds
            self.bytes = bytes
            self.elapsedSeconds = elapsedSeconds
        }
    }

    /// Why the export is done this way.
    public struct Decision: Sendable, Codable, Equatable, CustomStringConvertible {
        /// For a video preset: what kept the source from being copied as is (nil when it was copied,
        /// and for other presets).
        public var obstacle: PassthroughObstacle?
        /// One line, as `ExportSession.Result.decision` and status files give it
        /// (`re-encoded: 1920x1080 does not fit 1280x720 (1280x720)`).
        public var summary: String
        public var description: String { summary }
    }

    /// The file written.
    public struct Output: Sendable, Codable, Equatable {
        /// Where it goes, when known (the session's `outputURL`).
        public var path: String?
        public var type: OutputType
        /// FFmpeg's muxer (`mp4`, `mov`).
        public var muxer: String
        /// The major brand written instead of the muxer's own (`M4V `, `M4A `).
        public var brand: String?
        /// Moov atom first (`movflags=+faststart`).
        public var networkOptimized: Bool
    }

    /// What happens to the colours of the video.
    public enum ColorHandling: String, Sendable, Codable {
        /// Converted to BT.709 limited range and tagged so (SDR web video from an SDR source).
        case bt709
        /// The source's matrix, primaries and transfer kept and tagged, limited range (10-bit HEVC),
        /// with `hdrMetadata` written when the source has HDR10 metadata: HLG or HDR10 kept.
        case keepSource = "keep-source"
        /// HLG or PQ tone-mapped to SDR BT.709, limited range (`toneMapping` says from what, up to
        /// which peak).
        case toneMapped = "tone-mapped"
        /// The stream is copied: its colours are untouched.
        case copied
    }

    /// The video track's path through the export.
    public struct Video: Sendable, Codable, Equatable {
        /// The source stream's index.
        public var stream: Int
        public var sourceCodec: String
        /// The output's codec (`h264`, `hevc`, or the copied stream's).
        public var codec: String
        /// Copied unchanged (passthrough or smart passthrough) rather than re-encoded.
        public var copied: Bool
        /// The source's display size (rotation and sample aspect ratio applied).
        public var sourceWidth: Int?
        public var sourceHeight: Int?
        /// The output's picture size in pixels, upright: square pixels unless `pixelAspect` says otherwise.
        public var width: Int
        public var height: Int
        public var sourceFrameRate: Double?
        /// The preset's frame-rate cap.
        public var maxFrameRate: Double?
        /// Frames per second after the cap.
        public var frameRate: Double?
        /// Clockwise degrees the pixels are rotated by (0 for a copy, which keeps the display matrix).
        public var rotation: Int
        /// FFmpeg's encoder (`libx264`, `libx265`); nil for a copy.
        public var encoder: String?
        /// x264/x265 `preset`.
        public var encoderPreset: String?
        public var crf: Double?
        /// VBV cap in bits per second and buffer in bits.
        public var maxBitrate: Int?
        public var bufferSize: Int?
        public var profile: String?
        /// The encoder's pixel format (`yuv420p`, `yuv420p10le`); the source's for a copy.
        public var pixelFormat: String?
        public var bitDepth: Int?
        public var color: ColorHandling
        /// Colour tags the output carries, when the export sets them.
        public var colorPrimaries: String?
        public var colorTransfer: String?
        public var colorSpace: String?
        public var colorRange: String?
        /// The scaler's interpolation (swscale), when the video is re-encoded.
        public var scaler: String?
        /// The sample entry written (`hvc1` for HEVC, so Apple players accept it); nil leaves the muxer's.
        public var codecTag: String?
        /// Whether the pixels are mirrored left to right (before `rotation`), as the source's display
        /// matrix says (false for a copy, which keeps the matrix).
        public var mirrored: Bool = false
        /// The source's dynamic range (`sdr`, `hlg`, `pq`, `dolby-vision`).
        public var sourceDynamicRange: DynamicRange? = nil
        /// With `color` `tone-mapped`: the source's transfer and the peak (cd/m²) the highlights roll
        /// off to.
        public var toneMapping: ToneMapping? = nil
        /// HDR10 static metadata written into the output (SEI and `mdcv`/`clli`), when HDR is kept.
        public var hdrMetadata: HDRStaticMetadata? = nil
        /// For a source with transparency (animated GIF, APNG): the colour it is flattened onto.
        public var background: RGBColor? = nil
        /// At most this many frames from one keyframe to the next (x264/x265 `keyint`): two seconds of
        /// the output's frame rate. Nil for a copy.
        public var keyframeInterval: Int? = nil
        /// The shape of the output's pixels (sample aspect ratio, width over height) when they are not
        /// square: where the preset's size grid (or evenness, for a tiny picture) makes `width`x`height`
        /// more than 1 % wider or narrower than the source's display proportions, the pixels are
        /// shaped so the picture displays at the source's proportions. Nil: square pixels.
        public var pixelAspect: Rational? = nil
    }

    /// The audio track's path through the export.
    public struct Audio: Sendable, Codable, Equatable {
        public var stream: Int
        public var sourceCodec: String
        /// `aac`, or the copied stream's codec.
        public var codec: String
        public var copied: Bool
        /// Bits per second of the AAC encoder; the source's (when known) for a copy.
        public var bitRate: Int?
        public var channels: Int?
        public var sampleRate: Int?
        public var sourceChannels: Int?
        public var sourceSampleRate: Int?
    }

    /// What becomes of a stream.
    public enum StreamAction: String, Sendable, Codable {
        case transcode, copy, skip
    }

    /// One stream of the asset.
    public struct Stream: Sendable, Codable, Equatable {
        public var index: Int
        public var kind: TrackKind
        public var codec: String
        public var action: StreamAction
        /// Why a stream is skipped.
        public var reason: String?
    }

    /// The container metadata written.
    public struct Metadata: Sendable, Codable, Equatable {
        public var policy: MetadataPolicy
        /// The keys and values written (the source's, filtered by the policy).
        public var written: [String: String]
        /// The keys written that say where the recording was made (`MetadataPolicy.isLocationKey`),
        /// sorted; empty under `sharing` and `strip`.
        public var location: [String]
        /// The keys written that name the device or its software (`MetadataPolicy.isDeviceKey`), sorted.
        public var device: [String]
        /// The keys written that tie the file to a library, device or person (the content identifier;
        /// `MetadataPolicy.isIdentifierKey`), sorted; empty under `sharing` and `strip`.
        public var identifiers: [String]

        public init(policy: MetadataPolicy, written: [String: String]) {
            self.policy = policy
            self.written = written
            location = written.keys.filter(MetadataPolicy.isLocationKey).sorted()
            device = written.keys.filter(MetadataPolicy.isDeviceKey).sorted()
            identifiers = written.keys.filter(MetadataPolicy.isIdentifierKey).sorted()
        }

        private enum CodingKeys: String, CodingKey { case policy, written, location, device, identifiers }

        /// Plans written before `identifiers` existed read with the list made from `written`.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            policy = try c.decode(MetadataPolicy.self, forKey: .policy)
            written = try c.decode([String: String].self, forKey: .written)
            location = try c.decode([String].self, forKey: .location)
            device = try c.decode([String].self, forKey: .device)
            identifiers =
                try c.decodeIfPresent([String].self, forKey: .identifiers)
                ?? written.keys.filter(MetadataPolicy.isIdentifierKey).sorted()
        }
    }
}

/// What keeps a source from being copied as is under a video preset (smart passthrough): a stable
/// value for callers and tests; `ExportPlan.Decision.summary` says the same with the numbers.
public enum PassthroughObstacle: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case notAVideoPreset = "not-a-video-preset"
    case noVideo = "no-video"
    /// A time range is cut frame-accurately, which a copy cannot do.
    case timeRange = "time-range"
    /// `forceTranscode` asked for a re-encode.
    case forced
    case videoCodec = "video-codec"
    /// The output type cannot hold the codec.
    case container
    /// Bit depth or chroma subsampling other than the preset's.
    case pixelFormat = "pixel-format"
    /// An H.264 profile few players decode.
    case profile
    case rotation
    case nonSquarePixels = "non-square-pixels"
    case unknownSize = "unknown-size"
    /// Larger than the preset's box (or not a multiple of its size grid).
    case doesNotFit = "does-not-fit"
    case frameRate = "frame-rate"
    /// HDR must be converted for an SDR preset.
    case hdr
    case unknownBitRate = "unknown-bit-rate"
    case bitRate = "bit-rate"
    case audioCodec = "audio-codec"
    case audioChannels = "audio-channels"
    case audioSampleRate = "audio-sample-rate"
    case audioBitRate = "audio-bit-rate"
    /// The source is larger than the file size limit.
    case sizeLimit = "size-limit"
    /// A re-encode at the quality target (`--quality`) is measured well under the source's size.
    case qualityTarget = "quality-target"

    /// The stable code (`does-not-fit`).
    public var code: String { rawValue }

    public var description: String {
        switch self {
        case .notAVideoPreset: "not a video preset"
        case .noVideo: "the asset has no video"
        case .timeRange: "a time range is cut frame-accurately"
        case .forced: "re-encoding was forced"
        case .videoCodec: "the video codec is not the preset's"
        case .container: "the output type cannot hold the codec"
        case .pixelFormat: "the bit depth or chroma subsampling is not the preset's"
        case .profile: "the H.264 profile is not widely playable"
        case .rotation: "the rotation must be applied to the pixels"
        case .nonSquarePixels: "the pixels are not square"
        case .unknownSize: "the size is unknown"
        case .doesNotFit: "the picture does not fit the preset's box"
        case .frameRate: "the frame rate is above the preset's cap"
        case .hdr: "HDR must be converted to SDR"
        case .unknownBitRate: "the bit rate is unknown"
        case .bitRate: "the bit rate is above the preset's cap"
        case .audioCodec: "the audio is not AAC-LC"
        case .audioChannels: "the audio has more channels than the preset"
        case .audioSampleRate: "the audio is not at 44.1 or 48 kHz"
        case .audioBitRate: "the audio's bit rate is above the preset's"
        case .sizeLimit: "the source is larger than the size limit"
        case .qualityTarget: "a re-encode at the quality target is much smaller"
        }
    }
}

extension ExportPlan {
    /// The one place an export plan becomes ReelMedia's `TranscodePlan` (its output path and thread
    /// count are filled in by the session).
    func transcodePlan(limits: InputLimits) -> TranscodePlan {
        var plan = TranscodePlan(
            inputPath: asset, outputPath: "", container: Container(muxer: output.muxer, brand: output.brand),
            mode: mode, faststart: output.networkOptimized, metadata: metadata.written,
            startSeconds: timeRange.map(\.start).flatMap { $0 > 0 ? $0 : nil }, endSeconds: endSeconds,
            policy: limits)
        plan.inputByteRange = assetByteRange?.range
        return plan
    }

    /// Where the export stops reading: the requested end when it lies inside the asset. An end past
    /// the asset (clamped in `timeRange`) or an open one reads to the end of the media, so a container
    /// that declares less than it holds loses nothing.
    private var endSeconds: Double? {
        guard let end = (requestedTimeRange ?? timeRange)?.end, end == timeRange?.end else { return nil }
        return end
    }

    /// What ReelMedia does with the streams.
    private var mode: TranscodePlan.Mode {
        switch method {
        case .passthrough, .smartPassthrough:
            return .copy(streams: streams.filter { $0.action == .copy }.map(\.index))
        case .transcode:
            var encodedVideo: StreamEncoding<VideoEncoding>?
            if let video, let codec = VideoEncoding.Codec(rawValue: video.codec), let crf = video.crf,
                let encoderPreset = video.encoderPreset
            {
                let color: VideoEncoding.Color
                switch video.color {
                case .keepSource: color = .keepSource
                case .toneMapped: color = video.toneMapping.map { .toneMapped($0) } ?? .bt709
                case .bt709, .copied: color = .bt709
                }
                encodedVideo = StreamEncoding(
                    stream: video.stream,
                    encoding: VideoEncoding(
                        codec: codec, width: video.width, height: video.height, rotation: video.rotation,
                        mirrored: video.mirrored, tenBit: (video.bitDepth ?? 8) > 8, color: color,
                        encoderPreset: encoderPreset, crf: crf, maxBitrate: video.maxBitrate,
                        bufferSize: video.bufferSize, maxFrameRate: video.maxFrameRate, profile: video.profile,
                        hdrMetadata: video.color == .keepSource ? video.hdrMetadata : nil))
                encodedVideo?.encoding.pixelAspect = video.pixelAspect ?? Rational(1, 1)
                encodedVideo?.encoding.background = video.background?.packed ?? 0
                encodedVideo?.encoding.keyframeInterval = video.keyframeInterval
            }
            var encodedAudio: StreamEncoding<AudioEncoding>?
            if let audio, let bitRate = audio.bitRate, let channels = audio.channels, let rate = audio.sampleRate {
                encodedAudio = StreamEncoding(
                    stream: audio.stream,
                    encoding: AudioEncoding(bitrate: bitRate, channels: channels, sampleRate: rate))
            }
            return .transcode(video: encodedVideo, audio: encodedAudio)
        }
    }
}

/// A stretch of a file's bytes: `length` bytes from `offset` (what a Motion Photo's embedded video
/// occupies in its photo's file).
public struct ByteRange: Sendable, Codable, Equatable, Hashable, CustomStringConvertible {
    public var offset: Int64
    public var length: Int64

    public init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }

    public init(_ range: Range<Int64>) {
        self.init(offset: range.lowerBound, length: Int64(range.count))
    }

    /// `offset..<offset + length`.
    public var range: Range<Int64> { offset..<(offset + length) }

    /// `bytes 1234..<5678`.
    public var description: String { "bytes \(offset)..<\(offset + length)" }
}
