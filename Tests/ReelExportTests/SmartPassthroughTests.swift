import Foundation
import ReelExport
import TestSupport
import Testing

/// A source that already is what a preset would make is copied, not re-encoded, and the decision
/// says why either way.
@Suite("Smart passthrough", .tags(.media), .timeLimit(.minutes(10)))
struct SmartPassthroughTests {
    @Test func aCompatibleClipIsCopied() async throws {
        let (url, session) = try await export(Fixtures.landscape, preset: "1280x720", forceTranscode: false)
        let result = try #require(session.result)
        #expect(result.method == .smartPassthrough)
        #expect(try session.determineCompatibility().decision.obstacle == nil)
        #expect(try result.decision == session.determineCompatibility().decision.summary)
        let source = try await Fixtures.url(Fixtures.landscape)
        #expect(try await packetHashes(url, stream: "v:0") == packetHashes(source, stream: "v:0"))
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        #expect(try await ProbedFile.probe(url).format.tags?["location"] == "+48.8584+002.2945/")
    }

    @Test(arguments: [
        (Fixtures.fullHD, "1280x720", PassthroughObstacle.doesNotFit),
        (Fixtures.rotated(90), "1280x720", .rotation),
        (Fixtures.mirrored(.horizontal), "1280x720", .rotation),
        (Fixtures.hlgH264, "1280x720", .hdr),
        (Fixtures.hevc10, "1280x720", .videoCodec),
        (Fixtures.chroma444, "1280x720", .pixelFormat),
        (Fixtures.sixty, "MediumQuality", .doesNotFit),
        (Fixtures.sixty, "640x480", .frameRate),
        (Fixtures.anamorphic, "1920x1080", .nonSquarePixels),
        (Fixtures.surround, "1280x720", .audioChannels),
        (Fixtures.mono22k, "1280x720", .audioCodec),
    ])
    func anIncompatibleSourceIsReencodedWithTheReason(
        _ recipe: Fixtures.Recipe, _ preset: String, _ obstacle: PassthroughObstacle
    ) async throws {
        let asset = try await Asset.load(try await Fixtures.url(recipe))
        let session = try ExportSession(asset: asset, presetName: preset)
        let plan = try session.determineCompatibility()
        #expect(plan.method == .transcode)
        #expect(plan.decision.obstacle == obstacle, "\(plan.decision)")
        #expect(plan.decision.summary.hasPrefix("re-encoded: "))
    }

    @Test func forceTranscodeReencodes() async throws {
        let (_, session) = try await export(Fixtures.landscape, preset: "1280x720", forceTranscode: true)
        #expect(session.result?.method == .transcode)
        #expect(try session.determineCompatibility().decision.obstacle == .forced)
    }

    @Test func aTimeRangeIsAlwaysCutByReencoding() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "1280x720")
        session.timeRange = TimeRange(start: 0.2, end: 0.8)
        let plan = try session.determineCompatibility()
        #expect(plan.method == .transcode && plan.decision.obstacle == .timeRange)
    }
}
