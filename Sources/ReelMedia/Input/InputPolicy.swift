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
        allowedRoots: [String] = []
    ) {
        self.allowedDemuxers = allowedDemuxers
        self.maxFileBytes = maxFileBytes
        self.maxDurationSeconds = maxDurationSeconds
        self.maxDimension = maxDimension
        self.maxStreams = maxStreams
        self.allowedRoots = allowedRoots
    }

    /// `REEL_ALLOWED_ROOTS` (colon-separated folders) as a list, empty when unset.
    public static func roots(fromEnvironment environment: [String: String]) -> [String] {
        (environment["REEL_ALLOWED_ROOTS"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
    }

    /// The policy Reel uses unless configured otherwise.
    public static let standard = InputPolicy()
}
