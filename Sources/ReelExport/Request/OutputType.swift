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

extension OutputType {
    /// The type named by a file extension (`mp4`, `mov`, `m4v`, `m4a`, any case), or nil.
    public init?(fileExtension: String) {
        guard let type = OutputType.allCases.first(where: { $0.fileExtension == fileExtension.lowercased() }) else {
            return nil
        }
        self = type
    }

    /// The type an export writes, from what the request says: `explicit` (`--type`, a manifest's
    /// `type`), the output's file name, and the preset.
    ///
    /// An output name whose extension names a type sets it. An extension that contradicts an explicit
    /// type (`--type mov -o x.mp4`), or that names no type Reel writes (`-o out/clip.avi`, or none),
    /// is an `invalid-argument` error, unless the type is given explicitly and `forceExtension` is
    /// set. Without either, the preset's default type (`m4a` for audio presets, else `mp4`).
    public static func infer(
        explicit: String?, outputPath: String?, preset: Preset, forceExtension: Bool = false
    ) throws(ExportError) -> OutputType {
        var chosen: OutputType?
        if let explicit {
            guard let type = OutputType(name: explicit) else {
                throw ExportError(.invalidArgument, "unknown output type '\(explicit)'; use mp4, mov, m4v or m4a")
            }
            chosen = type
        } else if forceExtension {
            throw ExportError(
                .invalidArgument, "forcing the output's extension needs an explicit type (--type, or \"type\")")
        }
        guard let outputPath else { return chosen ?? ExportPlanner.defaultType(for: preset) }
        let name = (outputPath as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension
        let named = OutputType(fileExtension: ext)
        switch (chosen, named) {
        case (nil, let named?):
            return named
        case (let chosen?, let named?) where chosen == named:
            return chosen
        case (let chosen?, _) where forceExtension:
            return chosen
        case (let chosen?, let named?):
            throw ExportError(
                .invalidArgument,
                "the output \(name) is named .\(named.fileExtension) but the type is \(chosen.rawValue); name it .\(chosen.fileExtension), drop the type, or force the extension (--force-extension)"
            )
        case (let chosen?, nil):
            throw ExportError(
                .invalidArgument,
                "the output \(name) \(ext.isEmpty ? "has no extension" : "is named .\(ext), which is not a type Reel writes"); name it .\(chosen.fileExtension) or force the extension (--force-extension)"
            )
        case (nil, nil):
            throw ExportError(
                .invalidArgument,
                "the output \(name) \(ext.isEmpty ? "has no extension" : "is named .\(ext), which is not a type Reel writes") (mp4, mov, m4v, m4a); name it .\(ExportPlanner.defaultType(for: preset).fileExtension), or give the type with --force-extension"
            )
        }
    }

    /// The file name an export gets when none is given: `<asset name>.<preset>.<extension>`, with
    /// `tag` before the extension when given (a queued job's `{id}`, so jobs never collide).
    public static func defaultFileName(asset: URL, preset: Preset, type: OutputType, tag: String? = nil) -> String {
        OutputNaming.file(asset: asset, preset: preset, type: type, tag: tag)
    }
}
