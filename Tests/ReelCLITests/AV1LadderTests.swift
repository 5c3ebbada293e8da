import Foundation
import TestSupport
import Testing

/// Ladders of AV1 rungs: `--ladder` sizes under an AV1 preset (or a ladder preset naming AV1 presets)
/// write `av01` CMAF tracks whose CODECS are what ffprobe reads of each stream (profile, level, depth),
/// with key frames where every segment starts, and Chromium plays them through MSE.
@Suite("AV1 rungs in ladders", .tags(.process, .media, .browser), .timeLimit(.minutes(5)))
struct AV1LadderTests {
    /// `Fixtures.ladderSource` as a 2-rung AV1 ladder in 2 s segments, into `root/out`.
    static func export(into root: URL, extra: [String] = []) async throws -> URL {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let folder = root.appendingPathComponent("out")
        let export = try await ReelBinary.run(
            [
                "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--preset", "AV1_1280x720",
                "--segment-duration", "2", "-o", folder.path + "/",
            ] + extra, timeLimit: .seconds(300))
        try #require(export.status == 0, "\(export.stderr)")
        return folder
    }

    @Test func anAV1LadderHasExactCodecsAndAlignedKeyFrames() async throws {
        let folder = try await Self.export(into: Fixtures.scratchFolder("av1-ladder"))
        let master = try String(contentsOf: folder.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let variants = LadderTests.variants(master)
        #expect(variants.map(\.uri) == ["v0/index.m3u8", "v1/index.m3u8"], "\(master)")
        for variant in variants {
            let playlist = folder.appendingPathComponent(variant.uri)
            let rung = playlist.deletingLastPathComponent()
            // The rung as a player appends it, read by ffprobe: AV1 in `av01`, its profile and level.
            let file = folder.deletingLastPathComponent().appendingPathComponent("\(rung.lastPathComponent).mp4")
            try LadderTests.wholeRung(playlist).data.write(to: file)
            let probe = try await Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,codec_tag_string,profile,level,pix_fmt,width,height", "-of", "json", file.path,
                ])
            let stream = try #require(
                ((try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])?["streams"]
                    as? [[String: Any]])?.first, "\(probe.stderr)")
            #expect(stream["codec_name"] as? String == "av1" && stream["codec_tag_string"] as? String == "av01")
            #expect(stream["profile"] as? String == "Main" && stream["pix_fmt"] as? String == "yuv420p")
            // av01.<profile>.<seq_level_idx, two digits><tier>.<depth>: Main profile is 0, 8-bit 08.
            let level = try #require(stream["level"] as? Int)
            let expected = "av01.0." + String(format: "%02d", level) + "M.08"
            #expect(variant.attributes["CODECS"]?.hasPrefix(expected + ",") == true, "\(variant.attributes)")
            #expect(variant.attributes["RESOLUTION"] == "\(stream["width"] ?? 0)x\(stream["height"] ?? 0)")
            // Every segment starts on a key frame, at the same times in every rung.
            let probed = try await LadderTests.segments(of: playlist)
            #expect(probed.segments.allSatisfy { $0.startsWithKeyframe }, "\(probed.segments)")
            #expect(probed.segments.map { ($0.firstPts * 10).rounded() } == [0, 20, 40, 60], "\(probed.segments)")
        }
    }

    @Test func chromiumPlaysAnAV1Ladder() async throws {
        let chromium = try LadderPlaybackTests.chromium()
        let root = Fixtures.scratchFolder("av1-ladder-play")
        _ = try await Self.export(into: root)
        let dom = try await LadderPlaybackTests.play(root, chromium)
        let outcome = try LadderPlaybackTests.outcome(in: dom)
        let summary = "Chromium reported: \(try LadderPlaybackTests.outcomeText(in: dom))"
        #expect(outcome.errors.isEmpty, "\(summary)")
        #expect(outcome.supported.count == 3 && outcome.supported.values.allSatisfy { $0 }, "\(summary)")
        #expect(outcome.ended, "\(summary)")
        #expect(outcome.videoWidth == 640 && outcome.videoHeight == 360, "\(summary)")
        let quality = try #require(outcome.quality, "\(summary)")
        #expect(quality.corrupted == 0 && quality.total > 200, "\(summary)")
    }

    @Test func aLadderPresetNamesAV1PresetsOfOneCodec() async throws {
        let presets = Fixtures.scratchFolder("av1-ladder-presets")
        try Data(
            #"{"name": "AV1Ladder", "summary": "x", "kind": "ladder", "ladder": {"rungs": ["AV1_1920x1080", "AV1_1280x720"]}}"#
                .utf8
        ).write(to: presets.appendingPathComponent("AV1Ladder.json"))
        let listed = try await ReelBinary.run(["presets", "--presets-dir", presets.path])
        #expect(listed.status == 0 && listed.stdout.contains("AV1Ladder"), "\(listed.stderr)")
        try Data(
            #"{"name": "AV1Ladder", "summary": "x", "kind": "ladder", "ladder": {"rungs": ["AV1_1920x1080", "1280x720"]}}"#
                .utf8
        ).write(to: presets.appendingPathComponent("AV1Ladder.json"))
        let refused = try await ReelBinary.run(["presets", "--presets-dir", presets.path])
        let lines = refused.stderr.split(separator: "\n")
        #expect(refused.status != 0)
        #expect(
            lines.count == 1 && lines[0].contains("AV1Ladder.json: field 'ladder.rungs' mixes codecs (av1, h264)"),
            "\(refused.stderr)")
    }
}
