import Foundation
import TestSupport
import Testing

@testable import ReelMedia

/// The Dolby Vision box goes into a finished file wherever its moov is, and no sample moves unless
/// the chunk offsets move with it.
@Suite("Dolby Vision box", .tags(.process, .media), .timeLimit(.minutes(4)))
struct DolbyVisionBoxTests {
    /// Profile 8.4, as the fixtures write it.
    static let box = DolbyVisionBox(
        record: [1, 0, 0x10, 0x0d, 0x40] + [UInt8](repeating: 0, count: 19), profile: 8, sampleEntry: nil)

    @Test(arguments: [
        ["-movflags", "+faststart"],  // moov first, nothing spare after it: the samples move
        ["-moov_size", "65536"],  // moov first with reserved space after it
        [],  // moov at the end
    ])
    func theBoxIsAddedAndTheSamplesStayReadable(_ muxerOptions: [String]) async throws {
        let source = try await Fixtures.url(Fixtures.hlg)
        let url = Fixtures.scratchFolder("dv-box").appendingPathComponent("out.mp4")
        try await Tools.ffmpeg(["-i", source.path, "-c", "copy"] + muxerOptions + [url.path])
        let before = try await Self.frameHashes(url)
        let descriptor = open(url.path, O_RDWR)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try Self.box.write(toTrack: 0, of: descriptor)
        let entry = try MP4Boxes.videoSampleEntry(url)
        #expect(entry.children.contains("dvvC"), "\(entry)")
        let record = try #require(
            try await ProbedFile.probe(url).video?.side_data_list?.first {
                $0.side_data_type == "DOVI configuration record"
            })
        #expect(record.dv_profile == 8 && record.dv_level == 1 && record.dv_bl_signal_compatibility_id == 4)
        #expect(try await Self.frameHashes(url) == before)
        // A second call finds the box and leaves the file alone.
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int
        try Self.box.write(toTrack: 0, of: descriptor)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int == size)
    }

    /// Checksums of the decoded frames.
    static func frameHashes(_ url: URL) async throws -> [String] {
        let result = try await Tools.run(
            "ffmpeg", ["-nostdin", "-v", "error", "-i", url.path, "-map", "0:v", "-f", "framemd5", "-"])
        guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
        return result.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map {
            String($0.split(separator: ",").last ?? "")
        }
    }
}
