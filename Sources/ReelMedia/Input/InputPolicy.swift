/// What an input file may be and do: which demuxers may open it and how large it may be.
///
/// The defaults only admit containers that read nothing but the named file: no playlists (HLS, DASH),
/// no concat lists, no image sequences, no network protocols.
public struct InputPolicy: Sendable, Equatable, Codable {
    /// Demuxer names FFmpeg may use (matched against each of the demuxer's comma-separated names).
    public var allowedDemuxers: [String]
    /// Largest accepted file, in bytes.
    public var maxFileBytes: Int64
    /// Longest accepted duration, in seconds.
    public var maxDurationSeconds: Double
    /// Largest accepted video width or height, in pixels.
    public var maxDimension: Int
    /// Most pixels (width × height, as the header declares them) a photo may have. Photos get a limit of
    /// their own beside `maxDimension`: a 200 MP phone photo (16320×12240) is legitimate, a HEIC grid or a
    /// JPEG declaring 65535×65535 (4.3 billion pixels) is not. Checked from the header, before any pixel
    /// is decoded.
    public var maxPhotoPixels: Int
    /// Most streams an input may declare.
    public var maxStreams: Int
    /// When non-empty, inputs must lie under one of these folders once symlinks are resolved.
    public var allowedRoots: [String]

    /// Demuxers that read only the file they are given.
    public static let safeDemuxers = [
        "mov", "mp4", "matroska", "webm", "avi", "mpeg", "mpegts", "mpegvideo", "flv", "asf", "ivf",
        "obu", "wav", "w64", "mp3", "aac", "ac3", "eac3", "flac", "ogg", "aiff", "caf", "amr", "h264",
        "hevc", "m4v", "mjpeg", "dv", "mxf", "nut", "yuv4mpegpipe", "wv", "ape", "tta", "au",
        // Animated images: one file, its frames and delays (not image sequences, which name others).
        "gif", "apng",
    ]

    public init(
        allowedDemuxers: [String] = InputPolicy.safeDemuxers,
        maxFileBytes: Int64 = 64 << 30,
        maxDurationSeconds: Double = 24 * 3600,
        maxDimension: Int = 8192,
        maxStreams: Int = 64,
        allowedRoots: [String] = [],
        maxPhotoPixels: Int = InputPolicy.defaultMaxPhotoPixels
    ) {
        self.allowedDemuxers = allowedDemuxers
        self.maxFileBytes = maxFileBytes
        self.maxDurationSeconds = maxDurationSeconds
        self.maxDimension = maxDimension
        self.maxPhotoPixels = maxPhotoPixels
        self.maxStreams = maxStreams
        self.allowedRoots = allowedRoots
    }

    /// 250 million pixels: above the largest phone sensors (200 MP), far below what a hostile header
    /// can declare.
    public static let defaultMaxPhotoPixels = 250_000_000

    private enum CodingKeys: String, CodingKey {
        case allowedDemuxers, maxFileBytes, maxDurationSeconds, maxDimension, maxStreams, allowedRoots, maxPhotoPixels
    }

    /// A policy encoded before `maxPhotoPixels` existed decodes with its default.
    public init(from decoder: any Swift.Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        allowedDemuxers = try container.decode([String].self, forKey: .allowedDemuxers)
        maxFileBytes = try container.decode(Int64.self, forKey: .maxFileBytes)
        maxDurationSeconds = try container.decode(Double.self, forKey: .maxDurationSeconds)
        maxDimension = try container.decode(Int.self, forKey: .maxDimension)
        maxStreams = try container.decode(Int.self, forKey: .maxStreams)
        allowedRoots = try container.decode([String].self, forKey: .allowedRoots)
        maxPhotoPixels =
            try container.decodeIfPresent(Int.self, forKey: .maxPhotoPixels) ?? InputPolicy.defaultMaxPhotoPixels
    }

    /// `REEL_ALLOWED_ROOTS` (colon-separated folders) as a list, empty when unset.
    public static func roots(fromEnvironment environment: [String: String]) -> [String] {
        (environment["REEL_ALLOWED_ROOTS"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
    }

    /// The policy Reel uses unless configured otherwise.
    public static let standard = InputPolicy()
}
