import Foundation

/// How an output is named when the caller names none: the one rule `reel export`, `reel submit`,
/// manifests and ladders share, so the two commands never disagree about where a job's output goes.
public enum OutputNaming {
    /// The name of a file output: `<asset stem>.<preset>[.<tag>].<extension>` (`clip.1280x720.mp4`;
    /// a queued job's `tag` is its id, `{id}` until it has one).
    public static func file(asset: URL, preset: Preset, type: OutputType, tag: String? = nil) -> String {
        let stem = asset.deletingPathExtension().lastPathComponent
        return ([stem, preset.name] + (tag.map { [$0] } ?? []) + [type.fileExtension]).joined(separator: ".")
    }

    /// The name of a ladder's folder: `<asset stem>.<ladder preset, else the rungs' preset>[.<tag>].hls`,
    /// `.dash` when it holds a DASH manifest alone (`clip.HLSLadder1080.hls`).
    public static func ladderFolder(asset: URL, ladder: Ladder, preset: Preset, tag: String? = nil) -> String {
        let stem = asset.deletingPathExtension().lastPathComponent
        return ([stem, ladder.presetName ?? preset.name] + (tag.map { [$0] } ?? []) + [ladder.folderExtension])
            .joined(separator: ".")
    }
}
