import Foundation
import ReelExport
import ReelMedia
import TestSupport
import Testing

/// A quality target (`qualityTarget`, `--quality`): the CRF searched on samples, the whole output
/// measured by ffmpeg's `ssim` filter against the source scaled as the export scales it.
@Suite("Quality targets", .tags(.process, .media), .timeLimit(.minutes(15)))
struct QualityTargetTests {
    /// 8 s at 960x540, BT.709, as a camera would encode it (x264 veryfast CRF 16).
    static func clip(_ name: String, _ source: String, seconds: Int = 8) -> Fixtures.Recipe {
        Fixtures.Recipe(
            "quality-\(name).mp4",
            [
                "-f", "lavfi", "-i", source, "-t", "\(seconds)", "-vf",
                "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p", "-colorspace", "bt709", "-color_primaries",
                "bt709", "-color_trc", "bt709", "-color_range", "tv", "-c:v", "libx264", "-preset", "veryfast", "-crf",
                "16",
            ])
    }
    /// A slow pan over a still picture, film-like grain, high motion; and noise.
    static let pan = clip(
        "pan",
        "mandelbrot=size=1280x720:rate=30,trim=end_frame=1,loop=loop=-1:size=1,setpts=N/30/TB,crop=960:540:x='t*24':y='t*12'"
    )
    static let film = clip("film", "mandelbrot=size=960x540:rate=30,noise=alls=8:allf=t+u")
    static let motion = clip("motion", "testsrc2=size=960x540:rate=30,noise=alls=4:allf=t")
    static let noise = clip("noise", "color=c=gray:size=640x360:rate=30,noise=alls=10:allf=t+u", seconds: 4)

    static func session(_ recipe: Fixtures.Recipe, target: String, folder: URL) async throws -> ExportSession {
        let session = try ExportSession(
            asset: try await Asset.load(try await Fixtures.url(recipe)), presetName: "640x480")
        let parsed: QualityTarget = try #require(QualityTarget(target), "\(target)")
        session.qualityTarget = parsed
        session.forceTranscode = true
        session.outputURL = folder.appendingPathComponent("out.mp4")
        return session
    }

    /// ffmpeg's SSIM ("All") of `output` against `source` scaled to its size with the export's scaler.
    static func ssim(_ output: URL, source: URL, width: Int, height: Int) async throws -> Double {
        let result = try await Tools.run(
            "ffmpeg",
            [
                "-nostdin", "-hide_banner", "-i", output.path, "-i", source.path, "-lavfi",
                "[1:v]scale=\(width):\(height):flags=bicubic,format=yuv420p[ref];[0:v][ref]ssim", "-f", "null", "-",
            ], timeLimit: .seconds(300))
        let all = result.stderr.components(separatedBy: "All:").last?.prefix { $0.isNumber || $0 == "." }
        return try #require(all.flatMap { Double($0) }, "\(result.stderr.suffix(300))")
    }

    @Test(arguments: [pan, film, motion])
    func theWholeOutputLandsOnTheTarget(_ recipe: Fixtures.Recipe) async throws {
        let folder = Fixtures.scratchFolder("quality")
        let session = try await Self.session(recipe, target: "ssim:0.98", folder: folder)
        try await session.export()
        let result = try #require(session.result)
        let quality = try #require(result.quality)
        let output = try #require(session.outputURL)
        let measured = try await Self.ssim(
            output, source: try await Fixtures.url(recipe), width: result.width ?? 0, height: result.height ?? 0)
        #expect(abs(measured - 0.98) <= 0.003, "\(recipe): ffmpeg's SSIM \(measured) at CRF \(quality.crf)")
        // Reel's own measurement of the whole output is ffmpeg's.
        let own = try #require(quality.score)
        #expect(abs(own - measured) < 0.0005, "Reel \(own), ffmpeg \(measured)")
        #expect(quality.met && quality.measured?.frames == 240, "\(quality)")
        #expect(quality.target.description == "ssim:0.98")
    }

    /// AV1 (SVT-AV1) searches whole CRF steps and lands on the target too.
    @Test func anAV1ExportLandsOnTheTarget() async throws {
        let folder = Fixtures.scratchFolder("quality-av1")
        let session = try ExportSession(
            asset: try await Asset.load(try await Fixtures.url(Self.film)), presetName: "AV1_1280x720")
        session.qualityTarget = QualityTarget(metric: .ssim, value: 0.98)
        session.outputURL = folder.appendingPathComponent("out.mp4")
        try await session.export()
        let result = try #require(session.result)
        let quality = try #require(result.quality)
        #expect(quality.crf == quality.crf.rounded() && quality.crf != 32, "CRF \(quality.crf)")
        let measured = try await Self.ssim(
            try #require(session.outputURL), source: try await Fixtures.url(Self.film), width: result.width ?? 0,
            height: result.height ?? 0)
        #expect(
            abs(measured - 0.98) <= 0.003 && abs((quality.score ?? 0) - measured) < 0.0005, "\(measured) \(quality)")
    }

    /// The same target costs a still picture fewer bits than the preset's CRF spends, and noise more.
    @Test func theCRFMovesTheRightWay() async throws {
        let folder = Fixtures.scratchFolder("quality-direction")
        let still = try await Self.session(Self.pan, target: "ssim:0.92", folder: folder).measuredPlan()
        let noisy = try await Self.session(Self.noise, target: "ssim:0.92", folder: folder).measuredPlan()
        let preset = try #require(still.quality?.presetCRF)
        let stillCRF = try #require(still.quality?.search?.crf)
        let noisyCRF = try #require(noisy.quality?.search?.crf)
        #expect(stillCRF > preset + 5 && noisyCRF < preset, "still \(stillCRF), noise \(noisyCRF), preset \(preset)")
        #expect(still.video?.crf == stillCRF && noisy.video?.crf == noisyCRF)
        // The size is predicted from the samples at the chosen CRF.
        #expect(still.estimateMethod == .samples && still.estimatedBytes < noisy.estimatedBytes)
        #expect(contents(of: folder).isEmpty)
    }

    /// Smart passthrough keeps winning: a source that already fits the preset is copied unless a
    /// re-encode at the target is measured well under its size, and the decision says both sizes.
    @Test func aSourceThatFitsIsCopiedUnlessAReencodeIsMuchSmaller() async throws {
        let fits = Fixtures.Recipe(
            "quality-fits.mp4",
            [
                "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30", "-t", "6", "-c:v", "libx264", "-preset",
                "veryfast", "-crf", "14", "-pix_fmt", "yuv420p", "-colorspace", "bt709", "-color_primaries", "bt709",
                "-color_trc", "bt709", "-color_range", "tv",
            ])
        let folder = Fixtures.scratchFolder("quality-fits")
        func plan(_ target: String) async throws -> ExportPlan {
            let session = try await Self.session(fits, target: target, folder: folder)
            session.forceTranscode = false
            #expect(try session.determineCompatibility().method == .smartPassthrough)
            return try await session.measuredPlan()
        }
        let smaller = try await plan("ssim:0.97")
        #expect(smaller.method == .transcode && smaller.decision.obstacle == .qualityTarget, "\(smaller.decision)")
        #expect(smaller.decision.summary.contains("% of the source's"), "\(smaller.decision)")
        let kept = try await plan("ssim:0.999")
        #expect(kept.method == .smartPassthrough, "\(kept.decision)")
        #expect(kept.decision.summary.hasPrefix("copied: the source already fits 640x480, and at ssim:0.999"))
        #expect(kept.quality?.search != nil && kept.video?.copied == true)
        #expect(contents(of: folder).isEmpty)
    }

    /// A target the bit-rate cap does not let the floor CRF reach: said, and encoded at the floor.
    @Test func aTargetBeyondTheCapIsReported() async throws {
        let folder = Fixtures.scratchFolder("quality-cap")
        let session = try await Self.session(Self.noise, target: "ssim:0.95", folder: folder)
        try await session.export()
        let quality = try #require(session.result?.quality)
        #expect(!quality.met && quality.crf == 10, "\(quality)")
        #expect(quality.note.contains("not met within the preset's cap"), "\(quality.note)")
        #expect((quality.score ?? 1) < 0.95)
    }

    /// Cancelled while it searches: cancelled, nothing left in the folder.
    @Test func cancellingTheSearchLeavesNothing() async throws {
        let folder = Fixtures.scratchFolder("quality-cancel")
        let session = try await Self.session(Self.film, target: "ssim:0.98", folder: folder)
        let watcher = Task {
            for await update in session.progressUpdates where update.phase == .searching {
                session.cancelExport()
                return true
            }
            return false
        }
        await #expect(throws: ExportError.self) { try await session.export() }
        #expect(await watcher.value)
        #expect(session.status == .cancelled)
        #expect(contents(of: folder).isEmpty, "\(contents(of: folder))")
    }

    /// A per-title ladder cancelled while it searches its rungs: cancelled, no folder, no temporary.
    @Test func cancellingALaddersSearchLeavesNothing() async throws {
        let folder = Fixtures.scratchFolder("quality-ladder-cancel")
        let session = try await Self.session(Self.film, target: "ssim:0.98", folder: folder)
        session.ladder = try Ladder.parse("960x540,480x270", segmentDuration: nil)
        session.outputURL = folder.appendingPathComponent("out.hls")
        let watcher = Task {
            for await update in session.progressUpdates where update.phase == .searching && update.fraction > 0.2 {
                session.cancelExport()
                return true
            }
            return false
        }
        await #expect(throws: ExportError.self) { try await session.export() }
        #expect(await watcher.value)
        #expect(session.status == .cancelled)
        #expect(contents(of: folder).isEmpty, "\(contents(of: folder))")
    }
}
