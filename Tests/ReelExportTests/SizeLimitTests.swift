import Foundation
import TestSupport
import Testing

@testable import ReelExport

/// `fileLengthLimit` (`--max-size`) makes a file fit: every output at or under its limit, the whole
/// duration kept, the quality checked against the source with ffmpeg's SSIM; a limit no watchable
/// file can meet is refused before work, with the smallest feasible size.
@Suite("Size limits", .tags(.process, .media), .timeLimit(.minutes(15)))
struct SizeLimitTests {
    @Test("sizes are read in decimal and binary units")
    func parsing() {
        #expect(SizeLimit.parseBytes("16MB") == 16_000_000)
        #expect(SizeLimit.parseBytes("16 mb") == 16_000_000)
        #expect(SizeLimit.parseBytes("8MiB") == 8_388_608)
        #expect(SizeLimit.parseBytes("500k") == 500_000)
        #expect(SizeLimit.parseBytes("1.5GB") == 1_500_000_000)
        #expect(SizeLimit.parseBytes("123456") == 123_456)
        for bad in ["", "MB", "-1MB", "0", "16 parsecs", "1e3"] { #expect(SizeLimit.parseBytes(bad) == nil, "\(bad)") }
    }

    static func session(_ preset: String, limit: Int64, folder: URL) async throws -> ExportSession {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.fullHD20))
        let session = try ExportSession(asset: asset, presetName: preset)
        session.fileLengthLimit = limit
        session.outputURL = folder.appendingPathComponent("out.mp4")
        return session
    }

    /// SSIM (all planes) of `output`, scaled back to the source's size, against the source.
    static func ssim(_ output: URL, source: URL) async throws -> Double {
        let result = try await Tools.run(
            "ffmpeg",
            [
                "-nostdin", "-i", output.path, "-i", source.path, "-lavfi",
                "[0:v]scale=1920:1080:flags=bicubic[a];[a][1:v]ssim", "-f", "null", "-",
            ], timeLimit: .seconds(300))
        let all = result.stderr.components(separatedBy: "All:").last?.prefix { $0.isNumber || $0 == "." }
        return try #require(all.flatMap { Double($0) }, "\(result.stderr.suffix(300))")
    }

    @Test(
        "an export under a limit fits it, keeps the whole duration and stays watchable",
        arguments: [(Int64(8_000_000), 1080), (3_000_000, 540), (1_000_000, 360)])
    func fits(limit: Int64, height: Int) async throws {
        let folder = Fixtures.scratchFolder("max-size")
        let session = try await Self.session("1920x1080", limit: limit, folder: folder)
        let plan = try session.determineCompatibility()
        let chosen = try #require(plan.sizeLimit)
        #expect(plan.height == height, "\(chosen.summary)")
        #expect(plan.estimatedBytes <= limit)
        #expect((chosen.bitsPerPixel ?? 0) >= (chosen.floorBitsPerPixel ?? 1))
        try await session.export()
        let output = try #require(session.outputURL)
        let result = try #require(session.result)
        let probed = try await ProbedFile.probe(output)
        let bytes = try #require(try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? Int)
        #expect(bytes <= limit, "\(bytes) bytes over \(limit)")
        #expect(abs((probed.format.durationSeconds ?? 0) - 20) < 0.1, "\(probed.format.durationSeconds ?? 0) s")
        let ssim = try await Self.ssim(output, source: try await Fixtures.url(Fixtures.fullHD20))
        // Reported so the README's table can be checked: limit, bytes, SSIM, passes.
        print(
            "max-size \(limit): \(bytes) bytes, \(plan.width ?? 0)x\(plan.height ?? 0), SSIM \(ssim), passes \(result.encodingPasses ?? 0)"
        )
        #expect(ssim >= 0.93, "SSIM \(ssim)")
        #expect((result.encodingPasses ?? 0) >= 1)
    }

    @Test("a first encode over its limit is re-encoded once at a corrected rate, and then fits")
    func secondPass() async throws {
        let folder = Fixtures.scratchFolder("max-size-second")
        let session = try await Self.session("1920x1080", limit: 1_000_000, folder: folder)
        session.outputFault = .overshoot
        try await session.export()
        let result = try #require(session.result)
        print(
            "max-size 1000000 after an overshot first pass: \(result.bytes) bytes, passes \(result.encodingPasses ?? 0)"
        )
        #expect(result.encodingPasses == 2)
        #expect(result.bytes <= 1_000_000, "\(result.bytes) bytes")
        let probed = try await ProbedFile.probe(try #require(session.outputURL))
        #expect(abs((probed.format.durationSeconds ?? 0) - 20) < 0.1)
        #expect(contents(of: folder) == ["out.mp4"])
    }

    @Test("a limit no watchable file can meet is refused before work, with the smallest feasible size")
    func infeasible() async throws {
        let folder = Fixtures.scratchFolder("max-size-refused")
        let session = try await Self.session("1920x1080", limit: 100_000, folder: folder)
        #expect(throws: ExportError.self) { try session.determineCompatibility() }
        await #expect(throws: ExportError.self) { try await session.export() }
        let error = try #require(session.error)
        #expect(error.code == .limitExceeded && !error.isRetryable)
        #expect(error.message.contains("smallest feasible size is"), "\(error.message)")
        #expect(!error.message.contains("\n"))
        #expect(contents(of: folder).isEmpty)
        #expect(session.currentProgress.frames == 0)
    }

    @Test("an audio preset lowers its rate to fit, down to 32 kb/s (mono), and refuses below that")
    func audioOnly() async throws {
        let folder = Fixtures.scratchFolder("max-size-audio")
        let session = try await Self.session("AppleM4A", limit: 200_000, folder: folder)
        session.outputURL = folder.appendingPathComponent("out.m4a")
        try await session.export()
        let result = try #require(session.result)
        #expect(result.bytes <= 200_000 && abs(result.durationSeconds - 20) < 0.1, "\(result)")
        let tight = try await Self.session("AppleM4A", limit: 50_000, folder: folder)
        do {
            try tight.determineCompatibility()
            Issue.record("50 KB for 20 s of audio was accepted")
        } catch {
            #expect(error.code == .limitExceeded && error.message.contains("smallest feasible size is"))
        }
    }

    @Test("Passthrough with a limit under the source's size is refused before work")
    func passthroughRefused() async throws {
        let folder = Fixtures.scratchFolder("max-size-copy")
        let session = try await Self.session("Passthrough", limit: 1_000_000, folder: folder)
        #expect(throws: ExportError.self) { try session.determineCompatibility() }
        do {
            try session.determineCompatibility()
        } catch {
            #expect(error.code == .incompatiblePreset && error.message.contains("limit"), "\(error.message)")
        }
        let roomy = try await Self.session("Passthrough", limit: 100_000_000, folder: folder)
        #expect(try roomy.determineCompatibility().sizeLimit?.bytes == 100_000_000)
    }

    @Test("reel export --max-size refuses an impossible limit in one line; --estimate --json shows the choice")
    func cli() async throws {
        let source = try await Fixtures.url(Fixtures.fullHD20)
        let refused = try await ReelBinary.run(["export", source.path, "--preset", "1080p", "--max-size", "50KB"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("smallest feasible size is"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        let estimate = try await ReelBinary.run(
            ["export", source.path, "--preset", "1080p", "--max-size", "2MB", "--estimate", "--json"])
        #expect(estimate.status == 0, "\(estimate.stderr)")
        let plan = try JSONDecoder().decode(ExportPlan.self, from: Data(estimate.stdout.utf8))
        #expect(plan.sizeLimit?.bytes == 2_000_000)
        #expect(plan.estimatedBytes <= 2_000_000)
        #expect((plan.height ?? 0) < 1080 && plan.sizeLimit?.reducedFromHeight == 1080)
    }
}
