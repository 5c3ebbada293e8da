/// A rational number as FFmpeg keeps it (time bases, frame rates, aspect ratios).
public struct Rational: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public var numerator: Int
    public var denominator: Int
    public init(_ numerator: Int, _ denominator: Int) {
        self.numerator = numerator
        self.denominator = denominator
    }
    /// The value, or 0 when the denominator is 0 (FFmpeg's "unknown").
    public var value: Double { denominator == 0 ? 0 : Double(numerator) / Double(denominator) }
    public var isValid: Bool { numerator > 0 && denominator > 0 }
    public var description: String { "\(numerator)/\(denominator)" }
}

/// What kind of data a stream carries.
public enum StreamKind: String, Sendable, Codable {
    case video, audio, subtitle, data, attachment, unknown
}

/// Facts about one stream of a probed file.
public struct StreamInfo: Sendable, Codable {
    public var index: Int
    public var kind: StreamKind
    /// FFmpeg's short codec name (`h264`, `hevc`, `aac`, …).
    public var codec: String
    /// Codec profile name when known (`High`, `Main 10`, `LC`).
    public var profile: String?
    /// The sample-entry tag (`avc1`, `hvc1`, `hev1`) when the container has one.
    public var codecTag: String?
    public var isDefault: Bool
    /// Whether this stream is a cover picture rather than a moving video.
    public var isAttachedPicture: Bool
    public var timeBase: Rational
    public var durationSeconds: Double?
    /// Presentation time of the stream's first sample, in seconds, when known.
    public var startSeconds: Double?
    public var frameCount: Int?
    public var bitRate: Int?
    public var language: String?

    // Video
    /// Coded (storage) size.
    public var width: Int?
    public var height: Int?
    public var sampleAspectRatio: Rational?
    /// Clockwise rotation, in degrees (0, 90, 180, 270), that a player applies to display the frames
    /// (after mirroring them, when `isMirrored`).
    public var rotation: Int?
    /// Whether the display matrix mirrors the frames left to right before the rotation (front cameras
    /// write such matrices). A vertical flip is a mirror and a 180° rotation.
    public var isMirrored: Bool?
    /// Average frame rate, when known.
    public var frameRate: Rational?
    /// Whether timestamps are irregular (average and base frame rates disagree).
    public var isVariableFrameRate: Bool?
    public var pixelFormat: String?
    public var bitDepth: Int?
    /// Chroma subsampling as `4:2:0`, `4:2:2` or `4:4:4`.
    public var chromaSubsampling: String?
    public var colorTransfer: String?
    public var colorPrimaries: String?
    public var colorSpace: String?
    public var colorRange: String?
    /// SDR, HLG, PQ or Dolby Vision (video only).
    public var dynamicRange: DynamicRange?
    /// The Dolby Vision configuration record, when the container has one.
    public var dolbyVision: DolbyVisionConfiguration?
    /// Whether the first packet carries Dolby Vision RPU NAL units (HEVC type 62), with or without a
    /// configuration record.
    public var hasDolbyVisionRPU: Bool?
    /// HDR10 static metadata, from the container or else from the first frame's SEI.
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    public var hdrMetadataSource: HDRMetadataSource?

    // Audio
    public var sampleRate: Int?
    public var channels: Int?
    public var channelLayout: String?
    public var sampleFormat: String?

    /// Display size: coded size with the sample aspect ratio applied, then the rotation.
    public var displaySize: (width: Int, height: Int)? {
        guard let width, let height else { return nil }
        var displayWidth = Double(width)
        if let sar = sampleAspectRatio, sar.isValid, sar.numerator != sar.denominator {
            displayWidth = displayWidth * sar.value
        }
        let w = Int(displayWidth.rounded())
        if let rotation, rotation == 90 || rotation == 270 { return (height, w) }
        return (w, height)
    }

    public init(index: Int, kind: StreamKind, codec: String, timeBase: Rational) {
        self.index = index
        self.kind = kind
        self.codec = codec
        self.isDefault = false
        self.isAttachedPicture = false
        self.timeBase = timeBase
    }
}

/// Facts about a probed file: container, duration, metadata and streams.
public struct MediaInfo: Sendable, Codable {
    public var path: String
    /// FFmpeg's demuxer name, e.g. `mov,mp4,m4a,3gp,3g2,mj2`.
    public var formatName: String
    public var formatLongName: String
    public var durationSeconds: Double
    /// Presentation time of the first sample, in seconds.
    public var startSeconds: Double
    public var bitRate: Int?
    public var fileBytes: Int64
    /// Container-level metadata exactly as FFmpeg reads it.
    public var metadata: [String: String]
    public var streams: [StreamInfo]
    /// The `major_brand` of an ISO/QuickTime file (`isom`, `qt  `, `M4V `), if any.
    public var majorBrand: String? { metadata["major_brand"] }

    /// The video stream an export uses (attached pictures excluded), if any: FFmpeg's choice, unless
    /// it holds stills and another video stream holds motion (`chooseVideo`).
    public var bestVideoStream: StreamInfo?
    /// Why `bestVideoStream` was chosen, when the file has more than one video stream.
    public var videoStreamChoice: String?
    /// The stream FFmpeg would choose for audio, if any.
    public var bestAudioStream: StreamInfo?

    /// Whether a video stream's frames are stills rather than motion: at most 2 frames (a Samsung
    /// Motion Photo's second track holds two near-identical full-size stills).
    public static func holdsStills(_ stream: StreamInfo) -> Bool {
        guard let frames = stream.frameCount else { return false }
        return frames <= 2
    }

    /// The video stream to export among `streams`, and why, when there is a choice. FFmpeg's pick
    /// (`preferred`: the default disposition, then frames, then bit rate) stands unless it holds
    /// stills while another stream holds motion; then the motion is chosen: a default stream first,
    /// then the most frames, then the longest, then the first. The same rule serves Google's,
    /// Samsung's and Apple's files (one motion track, maybe beside stills or metadata).
    public static func chooseVideo(_ streams: [StreamInfo], preferred: StreamInfo?) -> (StreamInfo?, String?) {
        let videos = streams.filter { $0.kind == .video && !$0.isAttachedPicture }
        guard videos.count > 1 else { return (preferred ?? videos.first, nil) }
        func describe(_ stream: StreamInfo) -> String {
            var facts: [String] = []
            if let width = stream.width, let height = stream.height { facts.append("\(width)x\(height)") }
            if let frames = stream.frameCount { facts.append("\(frames) frame\(frames == 1 ? "" : "s")") }
            if let seconds = stream.durationSeconds { facts.append(String(format: "%.2f s", seconds)) }
            return "track \(stream.index) (\(facts.joined(separator: ", ")))"
        }
        let motion = videos.filter { !holdsStills($0) }
        let first = preferred ?? videos[0]
        guard holdsStills(first), !motion.isEmpty else {
            return (first, "\(describe(first)) of \(videos.count) video tracks: the default, then the most frames")
        }
        let chosen = motion.max { a, b in
            (a.isDefault ? 1 : 0, a.frameCount ?? 0, a.durationSeconds ?? 0, -a.index)
                < (b.isDefault ? 1 : 0, b.frameCount ?? 0, b.durationSeconds ?? 0, -b.index)
        }!
        let stills = videos.filter(holdsStills)
        let named = stills.map(describe).joined(separator: " and ")
        return (chosen, "\(describe(chosen)) is the motion; \(named) hold\(stills.count == 1 ? "s" : "") stills")
    }
}
