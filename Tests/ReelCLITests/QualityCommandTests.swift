import Foundation
import TestSupport
import Testing

/// `reel export --quality`: the plan says the CRF it searched and the size it predicts; values and
/// combinations it cannot honour are refused in one line, before any work.
@Suite("Quality targets on the command line", .tags(.process, .media), .timeLimit(.minutes(10)))
struct QualityCommandTests {
    @Test func theEstimateShowsTheSearch() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let json = try await ReelBinary.run([
            "export", source, "--preset", "640x480", "--force-transcode", "--quality", "ssim:0.98", "--estimate",
            "--json",
        ])
        #expect(json.status == 0, "\(json.stderr)")
        let plan = try #require(AnswersTests.objects(json.stdout).last, "\(json.stdout)")
        let quality = try #require(plan["quality"] as? [String: Any], "\(plan)")
        let search = try #require(quality["search"] as? [String: Any], "\(quality)")
        let video = try #require(plan["video"] as? [String: Any])
        #expect(quality["target"] as? String == "ssim:0.98")
        #expect(search["crf"] as? Double == video["crf"] as? Double)
        #expect((search["trials"] as? [Any])?.isEmpty == false && search["met"] as? Bool == true)
        #expect(plan["estimateMethod"] as? String == "samples")
        let human = try await ReelBinary.run([
            "export", source, "--preset", "640x480", "--force-transcode", "--quality", "ssim:0.98", "--estimate",
        ])
        #expect(human.stdout.contains("  quality   ssim:0.98: ssim "), "\(human.stdout)")
        #expect(human.stdout.contains("the quality search's"), "\(human.stdout)")
    }

    /// The AV1 presets carry a target (their CRF is searched on every export); `--quality none`
    /// encodes at the preset's CRF as it is.
    @Test func anAV1PresetAimsAtItsTargetUnlessToldNone() async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        func plan(_ extra: [String]) async throws -> [String: Any] {
            let run = try await ReelBinary.run(
                ["export", source, "--preset", "AV1_1280x720", "--estimate", "--json"] + extra,
                timeLimit: .seconds(300))
            #expect(run.status == 0, "\(run.stderr)")
            return try #require(AnswersTests.objects(run.stdout).last, "\(run.stdout)")
        }
        let aimed = try await plan([])
        let quality = try #require(aimed["quality"] as? [String: Any], "\(aimed)")
        #expect(quality["target"] as? String == "ssim:0.99")
        let search = try #require(quality["search"] as? [String: Any], "\(quality)")
        #expect((aimed["video"] as? [String: Any])?["crf"] as? Double == search["crf"] as? Double)
        let fixed = try await plan(["--quality", "none"])
        #expect(fixed["quality"] == nil, "\(fixed)")
        #expect((fixed["video"] as? [String: Any])?["crf"] as? Double == 32)
    }

    @Test(arguments: [
        (["--quality", "vmaf:95"], "cannot read the quality target 'vmaf:95'"),
        (["--quality", "ssim:0.98", "--max-size", "1MB"], "a quality target and a size limit cannot both"),
        (
            ["--quality", "ssim:0.98", "--type", "hls", "--ladder", "640x360", "--max-size", "1MB"],
            "does not take a size limit yet"
        ),
    ])
    func whatItCannotHonourIsRefused(_ options: [String], _ message: String) async throws {
        let source = try await Fixtures.url(Fixtures.landscape).path
        let folder = Fixtures.scratchFolder("quality-refused")
        let result = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "-o", folder.appendingPathComponent("out").path] + options)
        #expect(result.status == 64 && result.stderr.contains(message), "\(result.status): \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
