import Foundation

/// Test media, generated at test time with ffmpeg's lavfi sources (never committed), once per run.
///
/// Each fixture is a recipe of ffmpeg arguments; the first test that asks for it generates it into a
/// per-run folder, and later callers reuse the file.
public enum Fixtures {
    /// A recipe: the file name and ffmpeg's arguments (the output path is appended).
    public struct Recipe: Sendable, CustomStringConvertible {
        public var name: String
        public var arguments: [String]
        /// Fixtures this one is made from; `$0`, `$1`… in the arguments stand for their paths.
        public var inputs: [Recipe]
        /// Runs on the file ffmpeg wrote, for what ffmpeg cannot write (boxes, display matrices).
        public var patch: (@Sendable (URL) throws -> Void)?
        public init(
            _ name: String, _ arguments: [String], inputs: [Recipe] = [], patch: (@Sendable (URL) throws -> Void)? = nil
        ) {
            self.name = name
            self.arguments = arguments
            self.inputs = inputs
            self.patch = patch
        }
        public var description: String { name }
    }

    /// Generated files by name; a recipe asked for twice at once is generated once.
    private actor Made {
        var files: [String: Task<URL, any Error>] = [:]

        func url(_ recipe: Recipe) async throws -> URL {
            if let task = files[recipe.name] { return try await task.value }
            let task = Task<URL, any Error> {
                var inputs: [String] = []
                for input in recipe.inputs { inputs.append(try await Fixtures.url(input).path) }
                let arguments = recipe.arguments.map { argument in
                    argument.hasPrefix("$") ? Int(argument.dropFirst()).map { inputs[$0] } ?? argument : argument
                }
                let url = Fixtures.folder.appendingPathComponent(recipe.name)
                try await Tools.ffmpeg(arguments + [url.path])
                try recipe.patch?(url)
                return url
            }
            files[recipe.name] = task
            return try await task.value
        }
    }

    private static let made = Made()

    /// The folder this run's media is written to. Making it also sends this process's log lines into
    /// it (`TestLog`).
    public static let folder: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("reel-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        TestLog.install(in: url)
        return url
    }()

    /// A fresh, empty folder for one test's outputs.
    public static func scratchFolder(_ label: String = "out") -> URL {
        let url = folder.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Returns the fixture's file, generating it on first use (without holding a cooperative thread).
    public static func url(_ recipe: Recipe) async throws -> URL {
        try await made.url(recipe)
    }

    // MARK: - Recipes

    static func video(_ size: String, rate: Int = 30, seconds: Double = 1) -> [String] {
        ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate):duration=\(seconds)"]
    }

    static func audio(rate: Int = 48000, layout: String = "stereo", seconds: Double = 1) -> [String] {
        [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(rate):duration=\(seconds)", "-af",
            "aformat=channel_layouts=\(layout)",
        ]
    }

    static let h264 = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    static let aac = ["-c:a", "aac", "-b:a", "96k"]

    /// 640x360 H.264 + stereo AAC, 1 s at 30 fps, with creation time, location and device metadata.
    public static let landscape = Recipe(
        "landscape.mp4",
        video("640x360") + audio() + h264 + aac + [
            "-metadata", "creation_time=2024-05-01T10:00:00Z",
            "-metadata", "location=+48.8584+002.2945/",
            "-metadata", "com.apple.quicktime.location.ISO6709=+48.8584+002.2945/",
            "-metadata", "com.apple.quicktime.make=Apple",
            "-metadata", "com.apple.quicktime.model=iPhone 15 Pro",
            "-metadata", "com.apple.quicktime.content.identifier=9D2E4E5B-7A1C-4F0B-8F1E-0C2D3B4A5F60",
            "-movflags", "+use_metadata_tags",
        ])

    /// 1920x1080 H.264 + AAC, 20 s, at a high rate (CRF 18): what size limits are tested on.
    public static let fullHD20 = Recipe(
        "fullhd-20s.mp4",
        video("1920x1080", seconds: 20) + audio(seconds: 20)
            + ["-c:v", "libx264", "-preset", "veryfast", "-crf", "18", "-pix_fmt", "yuv420p"] + aac)

    /// 1920x1080 H.264 + AAC, 1 s: the preset anchors (Medium 568x320, Low 224x128).
    public static let fullHD = Recipe("fullhd.mp4", video("1920x1080", seconds: 1) + audio() + h264 + aac)

    /// 480x270 H.264 with a display rotation (clockwise degrees as Reel reports them).
    public static func rotated(_ tag: Int) -> Recipe {
        // The display matrix is written when remuxing; an encode would drop the tag.
        Recipe("rotated-\(tag).mp4", ["-i", "$0", "-c", "copy", "-metadata:s:v:0", "rotate=\(tag)"], inputs: [upright])
    }

    /// 480x270 H.264 + AAC, the base of the rotated clips.
    public static let upright = Recipe("upright.mp4", video("480x270") + audio() + h264 + aac)

    /// 640x360 HEVC Main 10 (yuv420p10le) with AAC.
    public static let hevc10 = Recipe(
        "hevc10.mp4",
        video("640x360") + audio() + [
            "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p10le", "-x265-params",
            "log-level=error:pools=none:frame-threads=1",
            "-tag:v", "hvc1",
        ] + aac)

    /// 720x576 with a 64:45 sample aspect ratio (displays as 1024x576).
    public static let anamorphic = Recipe(
        "anamorphic.mp4", video("720x576") + audio() + ["-vf", "setsar=64/45"] + h264 + aac)

    /// 640x480 (4:3).
    public static let fourThree = Recipe("fourthree.mp4", video("640x480") + audio() + h264 + aac)

    /// 33x17: tiny and odd, in Matroska with FFV1 (which allows odd sizes).
    public static let tinyOdd = Recipe(
        "tiny-odd.mkv", video("33x17") + audio() + ["-c:v", "ffv1", "-pix_fmt", "yuv420p", "-c:a", "flac"])

    /// 12x12: smaller than x265 encodes (it refuses pictures under 16 pixels a side).
    public static let tiny12 = Recipe("tiny12.mkv", video("12x12") + ["-c:v", "ffv1", "-pix_fmt", "yuv420p"])

    /// 4:4:4 chroma (H.264 High 4:4:4 Predictive).
    public static let chroma444 = Recipe(
        "chroma444.mp4",
        video("640x360") + audio() + ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv444p"] + aac)

    /// Video only.
    public static let noAudio = Recipe("no-audio.mp4", video("640x360") + h264)

    /// 5.1 AAC.
    public static let surround = Recipe(
        "surround.mp4", video("640x360") + audio(layout: "5.1") + h264 + ["-c:a", "aac", "-b:a", "256k"])

    /// Mono 22.05 kHz MP3 audio.
    public static let mono22k = Recipe(
        "mono22k.mp4",
        video("640x360") + audio(rate: 22050, layout: "mono") + h264 + ["-c:a", "libmp3lame", "-b:a", "64k"])

    /// Variable frame rate: 15 frames at 30 fps, then 15 frames at 10 fps.
    public static let variableRate = Recipe(
        "vfr.mkv",
        video("640x360", rate: 30, seconds: 1) + audio(seconds: 2) + [
            "-vf", "setpts='if(lt(N,15),N/30,0.5+(N-15)/10)/TB'", "-fps_mode", "vfr",
        ] + h264 + aac)

    /// 60 fps source (the 30 fps cap of MediumQuality halves it).
    public static let sixty = Recipe("sixty.mp4", video("640x360", rate: 60) + audio() + h264 + aac)

    /// A longer clip, for cancellation and progress.
    /// 320x240 H.264 with B-frames (x264 veryfast, up to 3) and a keyframe every 3 s, + AAC, 8 s: a
    /// Passthrough cut must start from a keyframe well before most starts and decode past its end.
    public static let gopsWithBFrames = Recipe(
        "gops-bframes.mp4",
        video("320x240", seconds: 8) + audio(rate: 44100, seconds: 8) + [
            "-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "90", "-keyint_min", "90",
            "-sc_threshold", "0", "-pix_fmt", "yuv420p",
        ] + aac)

    public static let long = Recipe("long.mp4", video("1280x720", seconds: 20) + audio(seconds: 20) + h264 + aac)

    /// Legacy and other codecs in their usual containers.
    public static let legacy: [Recipe] = [
        Recipe("mpeg2.mpg", video("640x360", rate: 25) + audio() + ["-c:v", "mpeg2video", "-c:a", "mp2"]),
        Recipe("mpeg4.avi", video("640x360", rate: 25) + audio() + ["-c:v", "mpeg4", "-c:a", "libmp3lame"]),
        Recipe(
            "mjpeg.avi",
            video("640x360", rate: 25) + audio() + ["-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-c:a", "pcm_s16le"]),
        Recipe(
            "prores.mov",
            video("640x360", rate: 25) + audio() + ["-c:v", "prores_ks", "-profile:v", "0", "-c:a", "pcm_s16le"]),
        Recipe(
            "vp9.webm",
            video("640x360", rate: 25) + audio() + [
                "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "500k", "-c:a", "libopus",
            ]),
        Recipe(
            "vp8.webm",
            video("640x360", rate: 25) + audio() + [
                "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "500k", "-c:a", "libvorbis",
            ]),
        Recipe(
            "av1.mkv",
            video("320x180", rate: 25) + audio() + [
                "-c:v", "libaom-av1", "-cpu-used", "8", "-b:v", "200k", "-c:a", "libopus",
            ]),
        Recipe("h264.ts", video("640x360", rate: 25) + audio() + h264 + ["-c:a", "aac"]),
    ]

    /// Audio only (for AppleM4A and Passthrough to m4a).
    public static let audioOnly = Recipe("audio-only.m4a", audio(seconds: 2) + aac)

    /// FLAC audio: listed by the MP4 muxer but refused by it in FFmpeg 5.1.
    public static let flac = Recipe("tone.flac", audio() + ["-c:a", "flac"])

    /// PCM in WAV: an audio codec an MP4 cannot hold without re-encoding.
    public static let wav = Recipe("pcm.wav", audio() + ["-c:a", "pcm_s16le"])
}
