import Foundation
import TestSupport
import Testing

/// Ladders do not carry AV1 rungs yet: `--ladder` sizes under an AV1 preset, and a ladder preset
/// naming one, are refused in one line before any work, leaving no output.
@Suite("AV1 rungs refused in ladders", .tags(.process, .media), .timeLimit(.minutes(5)))
struct AV1LadderTests {
    @Test func ladderSizesUnderAnAV1PresetAreRefused() async throws {
        let source = try await Fixtures.url(Fixtures.landscape)
        let out = Fixtures.scratchFolder("av1-ladder").appendingPathComponent("out")
        let refused = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--preset", "AV1_1280x720", "-o",
            out.path + "/",
        ])
        #expect(refused.status == 64, "\(refused.status) \(refused.stderr)")
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("AV1_1280x720 encodes AV1"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.path))
    }

    @Test func aLadderPresetNamingAnAV1PresetIsRefused() async throws {
        let presets = Fixtures.scratchFolder("av1-ladder-presets")
        try Data(
            #"{"name": "AV1Ladder", "summary": "x", "kind": "ladder", "ladder": {"rungs": ["AV1_1920x1080", "AV1_1280x720"]}}"#
                .utf8
        ).write(to: presets.appendingPathComponent("AV1Ladder.json"))
        let refused = try await ReelBinary.run(["presets", "--presets-dir", presets.path])
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("AV1Ladder.json: field 'ladder.rungs' names 'AV1_1920x1080'")
                && lines[0].contains("single files"), "\(refused.stderr)")
    }
}
