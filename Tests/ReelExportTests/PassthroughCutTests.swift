import Foundation
import ReelExport
import TestSupport
import Testing

/// Passthrough with a time range: packets are copied from the keyframe at or before the start and an
/// edit list makes players show exactly the range. Checked with ffmpeg (which honours edit lists)
/// frame by frame against the source: the first and last frames shown are the source's frames at the
/// range's start and just before its end, and ffprobe reports the range's length for every stream.
@Suite("Passthrough cuts", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PassthroughCutTests {
    struct Cut: Sendable, CustomStringConvertible {
        var start: Double
        var end: Double?
        var type: OutputType
        var description: String { "\(start)-\(end.map { "\($0)" } ?? "") into \(type.rawValue)" }
    }

    static let sourceSeconds = 8.0
    static let rate = 30.0

    @Test(arguments: [
        // Mid-GOP start (keyframes at 0, 3 and 6 s), end in the next GOP, in each MP4 family type.
        Cut(start: 2, end: 4, type: .mp4), Cut(start: 2, end: 4, type: .mov), Cut(start: 1.5, end: 2.5, type: .m4v),
        // A start on a keyframe; a range from the start; a range to the end.
        Cut(start: 3, end: 5, type: .mp4), Cut(start: 0, end: 4, type: .mp4), Cut(start: 6.5, end: nil, type: .mp4),
    ])
    func aCutShowsExactlyTheRange(_ cut: Cut) async throws {
        let (url, session) = try await export(
            Fixtures.gopsWithBFrames, preset: "Passthrough", type: cut.type,
            range: TimeRange(start: cut.start, end: cut.end))
        let end = cut.end ?? Self.sourceSeconds
        let length = end - cut.start

        let result = try #require(session.result)
        #expect(abs(result.durationSeconds - length) < 0.002)
        #expect(result.decision.contains("edit list"), "\(result.decision)")

        // ffprobe: the movie and each stream last the range's length (the edit lists end it).
        let probed = try await ProbedFile.probe(url)
        #expect(abs((probed.format.durationSeconds ?? 0) - length) < 0.002)
        for stream in probed.streams {
            #expect(abs((stream.durationSeconds ?? 0) - length) < 0.002, "\(stream.codec_type ?? "?")")
        }

        // The frames shown are the source's frames in the range, from the first to the last.
        let shown = try await decodedFrameHashes(url, filter: nil)
        let first = Int((cut.start * Self.rate).rounded())
        let last = Int((end * Self.rate).rounded()) - 1
        #expect(shown.count == last - first + 1)
        let source = try await Fixtures.url(Fixtures.gopsWithBFrames)
        let expected = try await decodedFrameHashes(source, filter: "select='eq(n\\,\(first))+eq(n\\,\(last))'")
        #expect(expected.count == 2)
        #expect(shown.first == expected.first, "first frame shown")
        #expect(shown.last == expected.last, "last frame shown")

        // The copy is a copy: each video packet of the output is one of the source's.
        let sourcePackets = Set(try await packetHashes(source, stream: "v:0"))
        #expect(try await packetHashes(url, stream: "v:0").allSatisfy { sourcePackets.contains($0) })
    }

    @Test func anAudioOnlyCutIntoM4AEndsAtTheRange() async throws {
        let (url, session) = try await export(
            Fixtures.audioOnly, preset: "Passthrough", type: .m4a, range: TimeRange(start: 0.5, end: 1.5))
        #expect(abs((session.result?.durationSeconds ?? 0) - 1) < 0.002)
        let probed = try await ProbedFile.probe(url)
        #expect(abs((probed.format.durationSeconds ?? 0) - 1) < 0.002)
        #expect(abs((probed.audio?.durationSeconds ?? 0) - 1) < 0.002)
    }

    /// MD5 of each decoded video frame, in display order, as ffmpeg's framemd5 muxer gives them.
    func decodedFrameHashes(_ url: URL, filter: String?) async throws -> [String] {
        let result = try await Tools.run(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", url.path, "-map", "0:v:0"]
                + (filter.map { ["-vf", $0, "-vsync", "passthrough"] } ?? []) + ["-f", "framemd5", "-"])
        guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
        return result.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }
}
