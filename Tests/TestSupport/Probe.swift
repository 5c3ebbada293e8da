import Foundation

/// What ffprobe (an independent reader, not Reel's) says about a file.
public struct ProbedFile: Decodable, Sendable {
    public struct Stream: Decodable, Sendable {
        public var index: Int
        public var codec_name: String?
        public var codec_type: String?
        public var codec_tag_string: String?
        public var profile: String?
        /// The codec's level as ffprobe gives it (AV1: `seq_level_idx`, 8 for level 4.0).
        public var level: Int?
        public var width: Int?
        public var height: Int?
        public var pix_fmt: String?
        public var sample_aspect_ratio: String?
        public var color_primaries: String?
        public var color_transfer: String?
        public var color_space: String?
        public var color_range: String?
        public var sample_rate: String?
        public var channels: Int?
        public var channel_layout: String?
        public var nb_frames: String?
        public var nb_read_frames: String?
        public var nb_read_packets: String?
        public var start_time: String?
        public var duration: String?
        public var avg_frame_rate: String?
        public var bits_per_raw_sample: String?
        public var tags: [String: String]?
        public var side_data_list: [SideData]?

        public struct SideData: Decodable, Sendable {
            public var side_data_type: String?
            public var rotation: Int?
            // DOVI configuration record
            public var dv_profile: Int?
            public var dv_level: Int?
            public var rpu_present_flag: Int?
            public var el_present_flag: Int?
            public var bl_present_flag: Int?
            public var dv_bl_signal_compatibility_id: Int?
            // Mastering display metadata (rationals as "n/d") and content light level
            public var red_x: String?
            public var green_y: String?
            public var white_point_x: String?
            public var min_luminance: String?
            public var max_luminance: String?
            public var max_content: Int?
            public var max_average: Int?

            /// An "n/d" field's value.
            public static func value(_ text: String?) -> Double? {
                guard let text else { return nil }
                let parts = text.split(separator: "/").compactMap { Double($0) }
                guard parts.count == 2, parts[1] != 0 else { return parts.count == 1 ? parts[0] : nil }
                return parts[0] / parts[1]
            }
        }

        public var frames: Int? { (nb_read_frames ?? nb_frames).flatMap(Int.init) }
        public var startSeconds: Double? { start_time.flatMap(Double.init) }
        public var durationSeconds: Double? { duration.flatMap(Double.init) }
        /// Width over height as the picture is displayed (its sample aspect ratio applied; an unknown
        /// or `0:1` ratio counts as square), or nil without a size.
        public var displayAspect: Double? {
            guard let width, let height, width > 0, height > 0 else { return nil }
            let parts = (sample_aspect_ratio ?? "1:1").split(separator: ":").compactMap { Double($0) }
            let pixel = parts.count == 2 && parts[0] > 0 && parts[1] > 0 ? parts[0] / parts[1] : 1
            return Double(width) * pixel / Double(height)
        }
        public var hasDisplayMatrix: Bool {
            (side_data_list ?? []).contains { $0.side_data_type == "Display Matrix" }
        }
        public var frameRate: Double? {
            guard let text = avg_frame_rate else { return nil }
            let parts = text.split(separator: "/").compactMap { Double($0) }
            guard parts.count == 2, parts[1] != 0 else { return nil }
            return parts[0] / parts[1]
        }
    }
    public struct Format: Decodable, Sendable {
        public var format_name: String?
        public var duration: String?
        public var size: String?
        public var tags: [String: String]?
        public var durationSeconds: Double? { duration.flatMap(Double.init) }
    }
    public var streams: [Stream]
    public var format: Format

    public var video: Stream? { streams.first { $0.codec_type == "video" } }
    public var audio: Stream? { streams.first { $0.codec_type == "audio" } }

    /// Runs ffprobe on `url`; `countFrames` decodes the file to count frames exactly.
    public static func probe(_ url: URL, countFrames: Bool = false) async throws -> ProbedFile {
        var arguments = ["-v", "error", "-print_format", "json", "-show_streams", "-show_format"]
        if countFrames { arguments.append("-count_frames") }
        let result = try await Tools.run("ffprobe", arguments + [url.path])
        guard result.status == 0 else { throw ToolFailure(message: "ffprobe \(url.path): \(result.stderr)") }
        return try JSONDecoder().decode(ProbedFile.self, from: Data(result.stdout.utf8))
    }

    /// The side data of the first video frame (decoded by ffprobe).
    public static func firstFrameSideData(_ url: URL) async throws -> [Stream.SideData] {
        let result = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-read_intervals", "%+#1", "-show_frames", "-show_entries",
                "frame=side_data_list", "-of", "json", url.path,
            ])
        guard result.status == 0 else { throw ToolFailure(message: "ffprobe \(url.path): \(result.stderr)") }
        struct Frames: Decodable {
            struct Frame: Decodable { var side_data_list: [Stream.SideData]? }
            var frames: [Frame]
        }
        let frames = try JSONDecoder().decode(Frames.self, from: Data(result.stdout.utf8))
        return frames.frames.first?.side_data_list ?? []
    }

    /// Presentation times of every video packet, in seconds, sorted.
    public static func videoTimestamps(_ url: URL) async throws -> [Double] {
        let result = try await Tools.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", url.path])
        guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
        return result.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            .sorted()
    }
}

/// What mediainfo (a second independent reader) says.
public enum MediaInfoTool {
    /// The General track's fields (e.g. `IsStreamable`, `Format`, `CodecID`).
    public static func general(_ url: URL) async throws -> [String: String] {
        try await track("General", of: url)
    }

    /// The first track of a type (`General`, `Video`, `Audio`), string fields only.
    public static func track(_ type: String, of url: URL) async throws -> [String: String] {
        let result = try await Tools.run("mediainfo", ["--Output=JSON", url.path])
        guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
        struct Root: Decodable {
            struct Media: Decodable { var track: [[String: JSONValue]] }
            var media: Media
        }
        let root = try JSONDecoder().decode(Root.self, from: Data(result.stdout.utf8))
        let track = root.media.track.first { $0["@type"]?.string == type } ?? [:]
        return track.compactMapValues(\.string)
    }

    /// The settings x264 or x265 wrote into the stream (`threads=1`, `numa-pools=none`, `no-wpp`, …);
    /// empty when the video was made by another encoder.
    public static func encoderSettings(_ url: URL) async throws -> [String] {
        let settings = try await track("Video", of: url)["Encoded_Library_Settings"] ?? ""
        return settings.components(separatedBy: " / ")
    }

    /// The frame threads x264 ran with, from the settings it writes into the stream (nil when the
    /// video was not made by x264).
    public static func x264Threads(_ url: URL) async throws -> Int? {
        let field = try await encoderSettings(url).first { $0.hasPrefix("threads=") }
        return field.flatMap { Int($0.dropFirst("threads=".count)) }
    }
}

/// A JSON value of which only strings are kept.
public enum JSONValue: Decodable, Sendable {
    case string(String)
    case other
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { self = .string(text) } else { self = .other }
    }
    public var string: String? { if case .string(let text) = self { text } else { nil } }
}
