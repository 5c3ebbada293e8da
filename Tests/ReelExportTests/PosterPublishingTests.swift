import Foundation
import ReelExport
import TestSupport
import Testing

/// The poster is published in the video's step: when the video cannot be moved into place after
/// the poster was, the poster is removed again, so neither is left.
@Suite("Poster publishing", .tags(.media), .timeLimit(.minutes(5)))
struct PosterPublishingTests {
    @Test func aVideoThatCannotBePublishedTakesItsPosterWithIt() async throws {
        let source = try await Fixtures.url(Fixtures.gop)
        let session = try ExportSession(asset: try await Asset.load(source), presetName: "640x480")
        let folder = Fixtures.scratchFolder("poster-publish")
        let video = folder.appendingPathComponent("clip.mp4")
        session.outputURL = video
        session.outputFileType = .mp4
        session.forceTranscode = true
        session.codecThreads = 1
        session.writesPoster = true
        // Another writer takes the video's name after the checks, just before publishing.
        session.publishGate = { _ = FileManager.default.createFile(atPath: video.path, contents: Data("theirs".utf8)) }
        let error = await #expect(throws: ExportError.self) { try await session.export() }
        #expect(error?.code == .outputExists, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["clip.mp4"])
        #expect(try String(contentsOf: video, encoding: .utf8) == "theirs")
    }
}
