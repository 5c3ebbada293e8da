import Foundation
import TestSupport
import Testing

/// `reel export --ladder … --quality ssim:0.98`: a per-title ladder. Each rung's CRF is searched on
/// samples; a rung that adds no quality over the one below it scaled up is left out. Checked with
/// ffmpeg's `ssim` filter on the rungs as written (init and media segments together, as a player
/// appends them) against the source scaled to each rung's size, and on the rung below scaled up.
@Suite("Per-title ladders", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PerTitleLadderTests {
    /// 4 s at 640x360, BT.709, as a camera would encode it (x264 veryfast CRF 16).
    static func clip(_ name: String, _ source: String) -> Fixtures.Recipe {
        Fixtures.Recipe(
            "pertitle-\(name).mp4",
            [
                "-f", "lavfi", "-i", source, "-t", "4", "-vf",
                "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p", "-colorspace", "bt709", "-color_primaries",
                "bt709", "-color_trc", "bt709", "-color_range", "tv", "-c:v", "libx264", "-preset", "veryfast", "-crf",
                "16",
            ])
    }
    /// Film-like grain over a detailed picture: every rung shows more than the one below.
    static let grain = clip("grain", "mandelbrot=size=640x360:rate=30,noise=alls=8:allf=t+u")
    /// A still, smooth gradient: nothing a larger rung could show that the smallest scaled up does not.
    static let gradient = clip("gradient", "gradients=size=640x360:rate=30:speed=0.002:seed=7")

    /// A rung's track as one file (`LadderTests.wholeRung`).
    static func track(_ folder: URL, _ name: String) throws -> URL {
        let data = try LadderTests.wholeRung(folder.appendingPathComponent("\(name)/index.m3u8")).data
        let file = folder.deletingLastPathComponent().appendingPathComponent("\(folder.lastPathComponent)-\(name).mp4")
        try data.write(to: file)
        return file
    }

    /// ffmpeg's SSIM ("All") of `output` scaled to `width`x`height` against `source` scaled there too
    /// (bicubic, as the ladder scales and as a player scales a smaller rung up).
    static func ssim(_ output: URL, source: URL, width: Int, height: Int) async throws -> Double {
        let result = try await Tools.run(
            "ffmpeg",
            [
                "-nostdin", "-hide_banner", "-i", output.path, "-i", source.path, "-lavfi",
                "[0:v]scale=\(width):\(height):flags=bicubic[out];[1:v]scale=\(width):\(height):flags=bicubic,format=yuv420p[ref];[out][ref]ssim",
                "-f", "null", "-",
            ], timeLimit: .seconds(300))
        let all = result.stderr.components(separatedBy: "All:").last?.prefix { $0.isNumber || $0 == "." }
        return try #require(all.flatMap { Double($0) }, "\(result.stderr.suffix(300))")
    }

    /// The export's `--json` completion line and its ladder's `quality` section.
    static func export(_ recipe: Fixtures.Recipe, ladder: String, into folder: URL) async throws -> (
        ladder: [String: Any], quality: [String: Any], rungs: [[String: Any]]
    ) {
        let source = try await Fixtures.url(recipe)
        let run = try await ReelBinary.run(
            [
                "export", source.path, "--ladder", ladder, "--quality", "ssim:0.98", "-o", folder.path, "--json",
            ], timeLimit: .seconds(300))
        #expect(run.status == 0, "\(run.stderr)")
        let completion = try #require(
            AnswersTests.objects(run.stdout).last { $0["event"] as? String == "completed" }, "\(run.stdout)")
        let ladder = try #require(completion["ladder"] as? [String: Any], "\(completion)")
        let quality = try #require(ladder["quality"] as? [String: Any], "\(ladder)")
        let rungs = try #require(quality["rungs"] as? [[String: Any]], "\(quality)")
        return (ladder, quality, rungs)
    }

    @Test func everyRungOfADetailedSourceIsKeptAtTheTarget() async throws {
        let folder = Fixtures.scratchFolder("pertitle-grain").appendingPathComponent("out.hls")
        let (ladder, quality, rungs) = try await Self.export(Self.grain, ladder: "640x360,320x180", into: folder)
        #expect(quality["target"] as? String == "ssim:0.98")
        #expect(rungs.map { $0["size"] as? String } == ["640x360", "320x180"])
        #expect(rungs.allSatisfy { $0["kept"] as? Bool == true && $0["met"] as? Bool == true }, "\(rungs)")
        #expect((ladder["video"] as? [Any])?.count == 2)
        let source = try await Fixtures.url(Self.grain)
        // Each rung as written lands on the target (within 0.003, as single exports do).
        let top = try Self.track(folder, "v0")
        let bottom = try Self.track(folder, "v1")
        let topScore = try await Self.ssim(top, source: source, width: 640, height: 360)
        let bottomScore = try await Self.ssim(bottom, source: source, width: 320, height: 180)
        #expect(abs(topScore - 0.98) <= 0.003 && abs(bottomScore - 0.98) <= 0.003, "\(topScore) \(bottomScore)")
        // The comparison that kept the top rung: the rung below scaled up scores well under it.
        let compared = try #require(rungs[0]["comparedScore"] as? Double)
        let scaledUp = try await Self.ssim(bottom, source: source, width: 640, height: 360)
        #expect(rungs[0]["comparedWith"] as? String == "320x180")
        #expect(abs(compared - scaledUp) <= 0.006, "searched \(compared), whole rung \(scaledUp)")
        #expect(topScore > scaledUp + 0.002)
        // Neither the preset's CRF nor one CRF for both: each rung has its own.
        let crfs = rungs.compactMap { $0["crf"] as? Double }
        #expect(crfs.count == 2 && !crfs.contains(22), "\(crfs)")
    }

    @Test func aStaticSourceKeepsOnlyTheRungThatAddsQuality() async throws {
        let folder = Fixtures.scratchFolder("pertitle-gradient").appendingPathComponent("out.hls")
        let (ladder, _, rungs) = try await Self.export(Self.gradient, ladder: "640x360,480x270,320x180", into: folder)
        #expect(rungs.map { $0["kept"] as? Bool } == [false, false, true], "\(rungs)")
        #expect(rungs.prefix(2).allSatisfy { $0["comparedWith"] as? String == "320x180" })
        #expect(rungs.prefix(2).allSatisfy { ($0["note"] as? String)?.contains("dropped: 320x180 scaled up") == true })
        // Written: the one rung kept, and the master playlist lists it alone.
        #expect((ladder["video"] as? [[String: Any]])?.map { $0["width"] as? Int } == [320])
        let master = try String(contentsOf: folder.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.components(separatedBy: "#EXT-X-STREAM-INF").count == 2, "\(master)")
        #expect(master.contains("RESOLUTION=320x180"))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("v1").path))
        // What a viewer of the dropped rungs gets instead: the kept rung scaled up still meets the target.
        let source = try await Fixtures.url(Self.gradient)
        let kept = try Self.track(folder, "v0")
        for (width, height) in [(640, 360), (480, 270)] {
            let score = try await Self.ssim(kept, source: source, width: width, height: height)
            #expect(score >= 0.98 - 0.002, "320x180 scaled to \(width)x\(height): \(score)")
        }
    }

    @Test func aQueuedLadderIsPerTitleToo() async throws {
        let folder = Fixtures.scratchFolder("pertitle-queued")
        let environment = ["REEL_SPOOL": folder.appendingPathComponent("spool").path]
        let submitted = try await ReelBinary.run(
            [
                "submit", try await Fixtures.url(Self.gradient).path, "--ladder", "640x360,320x180", "--quality",
                "ssim:0.98", "-o", folder.appendingPathComponent("queued.hls").path, "--json",
            ], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let worker = try await ReelBinary.run(["work", "--drain"], environment: environment, timeLimit: .seconds(300))
        #expect(worker.status == 0, "\(worker.stderr)")
        let id = try #require(AnswersTests.objects(submitted.stdout).first?["id"] as? String, "\(submitted.stdout)")
        let listed = try await ReelBinary.run(["status", id, "--json"], environment: environment)
        #expect(
            listed.stdout.contains("\"kept\":false") || listed.stdout.contains("\"kept\" : false"), "\(listed.stdout)")
        let master = try String(
            contentsOf: folder.appendingPathComponent("queued.hls/master.m3u8"), encoding: .utf8)
        #expect(master.components(separatedBy: "#EXT-X-STREAM-INF").count == 2, "\(master)")
    }
}
