import Foundation
import ReelMedia
import TestSupport
import Testing

/// `MediaProbe.readBack` reports what a written file holds, and finds truncation and damage.
@Suite("Read back", .tags(.process, .media), .timeLimit(.minutes(5)))
struct ReadBackTests {
    @Test("a whole file: every sample inside it, its first and last groups of pictures decode")
    func whole() async throws {
        let file = try MediaProbe.readBack(path: try await Fixtures.url(Fixtures.landscape).path)
        let video = try #require(file.streams.first { $0.kind == .video })
        let audio = try #require(file.streams.first { $0.kind == .audio })
        #expect(video.samples == 30 && video.samplesPastEnd == 0 && video.decodeFailure == nil)
        #expect(video.decodedAtStart > 0 && video.decodedAtEnd > 0)
        #expect(audio.decodeFailure == nil && audio.decodedAtStart >= audio.samples - 2)
        #expect(abs((video.durationSeconds ?? 0) - 1) < 0.05)
    }

    @Test("a truncated file is refused as truncated; zeroed media data does not decode")
    func damaged() async throws {
        let folder = Fixtures.scratchFolder("read-back")
        // Moov first, as Reel writes it: a cut keeps the index and loses samples.
        let source = folder.appendingPathComponent("faststart.mp4")
        try await Tools.ffmpeg([
            "-i", try await Fixtures.url(Fixtures.landscape).path, "-c", "copy", "-movflags", "+faststart", source.path,
        ])
        let bytes = try Data(contentsOf: source)
        let truncated = folder.appendingPathComponent("truncated.mp4")
        try bytes.prefix(bytes.count * 3 / 4).write(to: truncated)
        // Opening it already finds the cut (the header declares more than the file holds); were it
        // opened, its index would point past the end.
        do {
            let cut = try MediaProbe.readBack(path: truncated.path)
            #expect(cut.streams.contains { $0.samplesPastEnd > 0 })
        } catch {
            #expect(error.message.contains("truncated"), "\(error)")
        }
        var zeroed = bytes
        zeroed.replaceSubrange(bytes.count / 2..<bytes.count / 2 + 4096, with: Data(count: 4096))
        let damaged = folder.appendingPathComponent("zeroed.mp4")
        try zeroed.write(to: damaged)
        let file = try MediaProbe.readBack(path: damaged.path)
        #expect(file.streams.contains { $0.decodeFailure != nil })
    }
}
