import Foundation
import ReelExport
import TestSupport
import Testing

/// A source that already is what a preset would make is copied, not re-encoded, and the decision
/// says why either way.
@Suite("Smart passthrough", .timeLimit(.minutes(10)))
struct SmartPassthroughTests {
    @Test func aCompatibleClipIsCopied() async throws {
        let (url, session) = try await export(Fixtures.landscape, preset: "1280x720", forceTranscode: false)
        let result = try #require(session.result)
        #expect(result.method == .smartPassthrough)
        #expect(result.decision.contains("copied"))
        let source = try await Fixtures.url(Fixtures.landscape)
        #expect(try await packetHashes(url, stream: "v:0") == packetHashes(source, stream: "v:0"))
        #expect(try await MediaInfoTool.general(url)["IsStreamable"] == "Yes")
        #expect(try await ProbedFile.probe(url).format.tags?["location"] == "+48.8584+002.2945/")
    }

    @Test(arguments: [
        (Fixtures.fullHD, "1280x720", "does not fit"),
        (Fixtures.rotated(90), "1280x720", "rotation"),
        (Fixtures.hevc10, "1280x720", "not h264"),
        (Fixtures.chroma444, "1280x720", "4:4:4"),
        (Fixtures.sixty, "MediumQuality", "does not fit"),
        (Fixtures.sixty, "640x480", "fps cap"),
        (Fixtures.anamorphic, "1920x1080", "not square"),
        (Fixtures.surround, "1280x720", "channels"),
        (Fixtures.mono22k, "1280x720", "the audio is mp3"),
    ])
    func anIncompatibleSourceIsReencodedWithTheReason(_ recipe: Fixtures.Recipe, _ preset: String, _ words: String)
        async throws
    {
        let asset = try await Asset.load(try await Fixtures.url(recipe))
        let session = try ExportSession(asset: asset, presetName: preset)
        let decision = try session.determineCompatibility()
        #expect(decision.method == .transcode)
        #expect(decision.reason.contains(words), "\(decision.reason)")
    }

    @Test func forceTranscodeReencodes() async throws {
        let (_, session) = try await export(Fixtures.landscape, preset: "1280x720", forceTranscode: true)
        #expect(session.result?.method == .transcode)
        #expect(session.result?.decision == "re-encoded: re-encoding was forced")
    }

    @Test func aTimeRangeIsAlwaysCutByReencoding() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let session = try ExportSession(asset: asset, presetName: "1280x720")
        session.timeRange = TimeRange(start: 0.2, end: 0.8)
        #expect(try session.determineCompatibility().method == .transcode)
    }
}
