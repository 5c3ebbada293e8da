import Foundation
import ReelExport
import Testing

/// The presets' two tables, README's and the Presets article's, are made from the preset files (the
/// embedded copies of `Presets/*.json`), in their order: a new or changed preset changes its rows, and
/// `REEL_WRITE_DOCS=1` rewrites them.
@Suite("Preset tables")
struct PresetTableTests {
    static let presets = PresetLibrary.shipped.presets

    /// README: each preset, its other names and its one-line summary.
    @Test func readmesTableIsTheSummaries() throws {
        var rows = ["| preset | also | makes |", "| --- | --- | --- |"]
        for preset in Self.presets {
            let aliases = (preset.aliases ?? []).map { "`\($0)`" }.joined(separator: ", ")
            rows.append("| `\(preset.name)` | \(aliases.isEmpty ? "–" : aliases) | \(preset.summary) |")
        }
        try GeneratedBlock(name: "preset-summaries").check(rows.joined(separator: "\n") + "\n")
    }

    /// The Presets article: each preset's numbers as its file gives them.
    @Test func thePresetsArticlesTableIsTheNumbers() throws {
        var rows = [
            "| preset | video | encoder | at most | audio |",
            "| --- | --- | --- | --- | --- |",
        ]
        for preset in Self.presets {
            rows.append("| `\(preset.name)` | " + Self.cells(preset).joined(separator: " | ") + " |")
        }
        try GeneratedBlock(name: "preset-numbers").check(rows.joined(separator: "\n") + "\n")
    }

    static func cells(_ preset: Preset) -> [String] {
        let audio = preset.audio.map { audio in
            "AAC \(Self.rate(audio.bitrate, unit: "kb/s", scale: 1000))"
                + (audio.maxChannels == 1 ? " mono" : ", ≤ \(audio.maxChannels) channels")
        }
        switch preset.kind {
        case .video:
            guard let video = preset.video else { return ["–", "–", "–", audio ?? "–"] }
            let codec =
                switch video.codec {
                case .h264: "H.264"
                case .hevc: "HEVC (`hvc1`)"
                case .av1: "AV1 (`av01`)"
                }
            var picture =
                video.box.map { "\(codec) in \($0.map(String.init).joined(separator: "x"))" }
                ?? "\(codec) at the source size"
            if let multiple = video.sizeMultiple { picture += " (\(multiple)-pixel grid)" }
            if video.keepHighBitDepth == true { picture += ", 10-bit kept" }
            let encoder =
                "\(video.codec.encoderName) \(video.codec == .av1 ? "preset " : "")\(video.encoderPreset), CRF \(Self.number(video.crf))"
                + (video.profile.map { ", \($0)" } ?? "")
            var caps: [String] = []
            if let bitrate = video.maxBitrate { caps.append(Self.rate(bitrate, unit: "Mb/s", scale: 1_000_000)) }
            if let fps = video.maxFrameRate { caps.append("\(Self.number(fps)) fps") }
            return [picture, encoder, caps.isEmpty ? "–" : caps.joined(separator: ", "), audio ?? "–"]
        case .audio:
            return ["none", "–", "–", audio ?? "–"]
        case .passthrough:
            return ["every stream copied unchanged (remux), moov first", "–", "–", "copied"]
        case .ladder:
            guard let ladder = preset.ladder else { return ["–", "–", "–", "–"] }
            let rungs = ladder.rungs.map { "`\($0)`" }.joined(separator: ", ")
            let segments = ladder.segmentDuration.map { "\(Self.number($0)) s" } ?? "default"
            return [
                "a ladder of \(rungs), \(segments) CMAF segments", "each rung's preset", "each rung's preset",
                audio ?? "one AAC rendition",
            ]
        }
    }

    /// 8000000 → "8 Mb/s", 1200000 → "1.2 Mb/s".
    static func rate(_ value: Int, unit: String, scale: Double) -> String {
        "\(number(Double(value) / scale)) \(unit)"
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
