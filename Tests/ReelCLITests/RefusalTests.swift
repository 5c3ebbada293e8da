import Foundation
import TestSupport
import Testing

/// Inputs Reel does not open are refused in one line that says why: the container by name, a
/// playlist for what it is, a file cut short by how far it goes.
@Suite("Refusals that say why", .tags(.process, .media), .timeLimit(.minutes(5)))
struct RefusalTests {
    enum Refused: String, CaseIterable, Sendable {
        case realMedia, disguisedPlaylist, truncatedMatroska

        /// The refused file and the words its refusal must say.
        func file(in folder: URL) async throws -> (URL, [String]) {
            switch self {
            case .realMedia:
                let url = folder.appendingPathComponent("clip.rm")
                try await Tools.ffmpeg(
                    [
                        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=1", "-c:v", "rv20", "-f", "rm",
                        url.path,
                    ]
                )
                return (url, ["RealMedia (rm) files are not accepted; accepted containers: mov, mp4, matroska"])
            case .disguisedPlaylist:
                let url = folder.appendingPathComponent("holiday.mp4")
                try Data("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nsegment0.ts\n#EXT-X-ENDLIST\n".utf8).write(
                    to: url)
                return (url, ["this .mp4 is an HLS playlist; playlists are never followed"])
            case .truncatedMatroska:
                let whole = folder.appendingPathComponent("whole.mkv")
                try await Tools.ffmpeg(
                    [
                        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=2", "-c:v", "libx264", "-preset",
                        "ultrafast", whole.path,
                    ])
                let url = folder.appendingPathComponent("cut.mkv")
                try Data(contentsOf: whole).prefix(6 * 1024).write(to: url)
                return (url, ["ends after 6 KB", "truncated"])
            }
        }
    }

    @Test(arguments: Refused.allCases)
    func refusalNamesTheCause(_ kind: Refused) async throws {
        let folder = Fixtures.scratchFolder("refused")
        let (input, words) = try await kind.file(in: folder)
        let output = folder.appendingPathComponent("out.mp4")
        let result = try await ReelBinary.run(["export", input.path, "--preset", "640x480", "-o", output.path])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        for word in words { #expect(result.stderr.contains(word), "\(result.stderr)") }
        #expect(!FileManager.default.fileExists(atPath: output.path))

        let json = try await ReelBinary.run([
            "export", input.path, "--preset", "Passthrough", "--json", "-o", output.path,
        ])
        let line = try #require(json.stdout.split(separator: "\n").last)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let error = try #require(event["error"] as? [String: Any])
        #expect(error["code"] as? String == "unreadable-input")
        #expect(error["retryable"] as? Bool == false)
        for word in words { #expect((error["message"] as? String)?.contains(word) == true, "\(error)") }

        let probe = try await ReelBinary.run(["probe", input.path])
        #expect(probe.status == 65 && probe.stderr.contains(words[0]), "\(probe.stderr)")
    }
}
