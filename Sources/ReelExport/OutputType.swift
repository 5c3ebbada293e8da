import Foundation
internal import ReelMedia

/// The file type an export writes, like `AVFileType`.
public enum OutputType: String, Sendable, CaseIterable, Codable {
    /// MPEG-4 (`public.mpeg-4`), the default.
    case mp4
    /// QuickTime movie (`com.apple.quicktime-movie`).
    case mov
    /// MPEG-4 with Apple's `M4V ` brand (`com.apple.m4v-video`).
    case m4v
    /// MPEG-4 audio, for audio-only presets (`com.apple.m4a-audio`).
    case m4a

    /// Accepts `mp4`, `.mp4`, `MP4` and Apple's uniform type identifiers (`public.mpeg-4`, …).
    public init?(name: String) {
        let lowered = name.lowercased().trimmingCharacters(in: .whitespaces)
        let trimmed = lowered.hasPrefix(".") ? String(lowered.dropFirst()) : lowered
        switch trimmed {
        case "mp4", "public.mpeg-4": self = .mp4
        case "mov", "qt", "quicktime", "com.apple.quicktime-movie": self = .mov
        case "m4v", "com.apple.m4v-video": self = .m4v
        case "m4a", "com.apple.m4a-audio": self = .m4a
        default: return nil
        }
    }

    /// Apple's uniform type identifier.
    public var uniformTypeIdentifier: String {
        switch self {
        case .mp4: "public.mpeg-4"
        case .mov: "com.apple.quicktime-movie"
        case .m4v: "com.apple.m4v-video"
        case .m4a: "com.apple.m4a-audio"
        }
    }

    /// The file name extension.
    public var fileExtension: String { rawValue }

    /// Whether this type holds audio only.
    public var isAudioOnly: Bool { self == .m4a }

    var container: Container {
        switch self {
        case .mp4: Container(muxer: "mp4")
        case .mov: Container(muxer: "mov")
        case .m4v: Container(muxer: "mp4", brand: "M4V ")
        case .m4a: Container(muxer: "mp4", brand: "M4A ")
        }
    }
}
