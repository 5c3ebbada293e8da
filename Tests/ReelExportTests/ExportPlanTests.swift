import Foundation
import TestSupport
import Testing

@testable import ReelExport

/// The plan of an export is a value: what `reel export --estimate --json` prints, what the session
/// runs, and what ffprobe finds in the file the session writes.
@Suite("Export plans", .tags(.process, .media), .timeLimit(.minutes(6)))
struct ExportPlanTests {
    static func plan(
        _ recipe: Fixtures.Recipe, preset: String, type: OutputType? = nil, range: TimeRange? = nil,
        force: Bool = false, optimize: Bool = true
    ) async throws -> ExportPlan {
        let session = try ExportSession(asset: try await Asset.load(try await Fixtures.url(recipe)), presetName: preset)
        session.outputFileType = type
        session.shouldOptimizeForNetworkUse = optimize
        session.timeRange = range
        session.forceTranscode = force
        return try session.determineCompatibility()
    }

    @Test func aTranscodePlanSaysWhatTheFileWillBe() async throws {
        let plan = try await Self.plan(Fixtures.sixty, preset: "640x480")
        #expect(plan.method == .transcode && plan.decision.obstacle == .frameRate)
        #expect(plan.width == 640 && plan.height == 360 && plan.frameRate == 30 && plan.durationSeconds == 1)
        let video = try #require(plan.video)
        #expect(video.encoder == "libx264" && video.encoderPreset == "medium" && video.crf == 22)
        #expect(video.maxBitrate == 2_500_000 && video.bufferSize == 5_000_000 && video.profile == "high")
        #expect(video.pixelFormat == "yuv420p" && video.color == .bt709 && video.sourceFrameRate == 60)
        let audio = try #require(plan.audio)
        #expect(!audio.copied && audio.bitRate == 128_000 && audio.channels == 2 && audio.sampleRate == 48_000)
        #expect(plan.streams.map(\.action) == [.transcode, .transcode])
        #expect(plan.output.type == .mp4 && plan.output.muxer == "mp4" && plan.output.networkOptimized)
        #expect(plan.estimatedBytes > 0)
        // What ffprobe finds in the file the same export writes.
        let (url, _) = try await export(Fixtures.sixty, preset: "640x480")
        let probed = try await ProbedFile.probe(url)
        #expect(probed.video?.width == plan.width && probed.video?.height == plan.height)
        #expect(abs((probed.video?.frameRate ?? 0) - 30) < 0.5)
        #expect(probed.video?.profile == "High" && probed.video?.pix_fmt == video.pixelFormat)
        #expect(probed.audio?.channels == audio.channels && probed.audio?.sample_rate == "48000")
    }

    @Test func aTenBitSourceUnderHEVCKeepsItsDepthAndColours() async throws {
        let plan = try await Self.plan(Fixtures.hevc10, preset: "HEVC1920x1080", force: true)
        let video = try #require(plan.video)
        #expect(video.encoder == "libx265" && video.codecTag == "hvc1" && video.bitDepth == 10)
        #expect(video.pixelFormat == "yuv420p10le" && video.color == .keepSource)
        #expect(try await Self.plan(Fixtures.hevc10, preset: "1280x720").video?.bitDepth == 8)
    }

    @Test func copiesAreEstimatedFromTheSourcesBytes() async throws {
        let smart = try await Self.plan(Fixtures.landscape, preset: "1280x720")
        #expect(smart.method == .smartPassthrough && smart.decision.obstacle == nil)
        #expect(smart.video?.copied == true && smart.audio?.copied == true)
        let (url, _) = try await export(Fixtures.landscape, preset: "1280x720", forceTranscode: false)
        let bytes = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64)
        #expect(abs(Double(smart.estimatedBytes) / Double(bytes) - 1) < 0.05, "\(smart.estimatedBytes) vs \(bytes)")
        let whole = try await Self.plan(Fixtures.landscape, preset: "Passthrough", optimize: false)
        let half = try await Self.plan(
            Fixtures.landscape, preset: "Passthrough", range: TimeRange(start: 0.5, end: nil), optimize: false)
        #expect(half.method == .passthrough && half.durationSeconds == 0.5)
        // The clip's only keyframe is its first frame: the cut copies every packet from there (its edit
        // list shows the last half), so it is estimated as large as the whole.
        #expect(half.copiedFromSeconds == 0)
        #expect(abs(Double(half.estimatedBytes) / Double(whole.estimatedBytes) - 1) < 0.01)
    }

    @Test func theOneMappingGivesReelMediaThePlan() async throws {
        let transcode = try await Self.plan(Fixtures.rotated(90), preset: "MediumQuality")
        let media = transcode.transcodePlan(limits: .standard)
        guard case .transcode(let video?, let audio?) = media.mode else {
            Issue.record("not a transcode of video and audio: \(media.mode)")
            return
        }
        #expect(video.stream == transcode.video?.stream && video.encoding.rotation == 270)
        #expect(video.encoding.width == transcode.width && video.encoding.crf == 24)
        #expect(audio.encoding.bitrate == transcode.audio?.bitRate && media.faststart)
        let copy = try await Self.plan(Fixtures.landscape, preset: "Passthrough").transcodePlan(limits: .standard)
        #expect(copy.mode == .copy(streams: [0, 1]))
    }

    @Test func aPlanSurvivesJSON() async throws {
        let plan = try await Self.plan(Fixtures.surround, preset: "1280x720", range: TimeRange(start: 0.1, end: 0.9))
        let data = try JSONCoding.lineEncoder.encode(plan)
        #expect(try JSONCoding.decoder.decode(ExportPlan.self, from: data) == plan)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((object["decision"] as? [String: Any])?["obstacle"] as? String == "time-range")
        #expect(object["estimatedBytes"] as? Int == Int(plan.estimatedBytes))
    }

    @Test func estimatePrintsThePlanAndWritesNothing() async throws {
        let folder = Fixtures.scratchFolder("cli-estimate")
        let source = try await Fixtures.url(Fixtures.fullHD).path
        let output = folder.appendingPathComponent("clip.mov")
        let json = try await ReelBinary.run([
            "export", source, "--preset", "720p", "-o", output.path, "--time-range", "0.25-0.75", "--estimate",
            "--json",
        ])
        #expect(json.status == 0, "\(json.stderr)")
        let plan = try JSONCoding.decoder.decode(ExportPlan.self, from: Data(json.stdout.utf8))
        #expect(plan.output.type == .mov && plan.output.path == output.path && plan.durationSeconds == 0.5)
        #expect(plan.width == 1280 && plan.decision.obstacle == .timeRange && plan.estimatedBytes > 0)
        let text = try await ReelBinary.run(["export", source, "--preset", "720p", "-o", output.path, "--estimate"])
        #expect(text.status == 0 && text.stdout.contains("transcode") && text.stdout.contains("estimate"))
        #expect(contents(of: folder).isEmpty)
    }
}
