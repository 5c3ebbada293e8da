import Foundation
import TestSupport
import Testing

/// Sources with coarse time bases (one tick a frame: 1/10, 1/24, 1/30, 125/2997), as old cameras, AVI
/// files and QuickTime movies have them, exported at their own size and scaled: every video packet of
/// the output is decoded no later than it is shown and after the one before (read with ffprobe's
/// `-show_packets`), and no frame is lost. A coarse time base once let a run of P frames use up the
/// reorder delay, so the next B frames got a decode time after their presentation time and the MP4
/// muxer refused the stream after the whole encode.
@Suite("Timestamps of coarse time bases", .tags(.process, .media), .timeLimit(.minutes(10)))
struct TimestampSweepTests {
    static func testsrc(_ size: String, rate: String, seconds: Int) -> [String] {
        ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate):duration=\(seconds)"]
    }

    /// vtest.avi's kind: msmpeg4v3 768x576 at 10 fps in AVI (time base 1/10).
    static let msmpeg4 = Fixtures.Recipe(
        "coarse-msmpeg4-10fps.avi", testsrc("768x576", rate: "10", seconds: 12) + ["-c:v", "msmpeg4v3", "-q:v", "4"])
    /// Megamind.avi's kind: MPEG-4 Part 2 with B-frames, 720x528 at 2997/125 fps in AVI (time base 125/2997).
    static let mpeg4 = Fixtures.Recipe(
        "coarse-mpeg4-2997-125.avi",
        testsrc("720x528", rate: "2997/125", seconds: 10) + ["-c:v", "mpeg4", "-bf", "2", "-q:v", "4"])
    /// A phone's small MPEG-4 QuickTime movie: 190x240 at 30 fps, time base 1/30.
    static let quickTime = Fixtures.Recipe(
        "coarse-mpeg4-30fps.mov",
        testsrc("190x240", rate: "30", seconds: 10) + ["-c:v", "mpeg4", "-q:v", "4", "-video_track_timescale", "30"])
    /// H.264 with B-pyramid (3 B-frames) at 24 fps, time base 1/24.
    static let pyramid = Fixtures.Recipe(
        "coarse-h264-pyramid-24fps.mov",
        testsrc("640x360", rate: "24", seconds: 10) + [
            "-c:v", "libx264", "-preset", "veryfast", "-x264-params", "b-pyramid=normal:bframes=3", "-pix_fmt",
            "yuv420p", "-video_track_timescale", "24",
        ])

    /// Each source under a preset whose box it fits (encoded at its own size) and one that scales it;
    /// two under HEVC presets.
    static let cases: [(Fixtures.Recipe, String)] = [
        (msmpeg4, "1280x720"), (msmpeg4, "640x480"),
        (mpeg4, "1280x720"), (mpeg4, "640x480"),
        (quickTime, "1280x720"), (quickTime, "LowQuality"),
        (pyramid, "1280x720"), (pyramid, "LowQuality"),
        // x265 reorders with B-pyramid too, and leaves has_b_frames at 0 (FFmpeg 5.1).
        (msmpeg4, "HEVC1280x720"), (mpeg4, "HEVC640x480"),
    ]

    /// The video packets' (pts, dts) in decode order, as ffprobe reads them.
    static func packets(_ url: URL) async throws -> [(pts: Int64, dts: Int64)] {
        let result = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_packets", "-show_entries", "packet=pts,dts", "-of",
                "csv=p=0", url.path,
            ])
        guard result.status == 0 else { throw ToolFailure(message: "ffprobe \(url.path): \(result.stderr)") }
        return result.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",").map { Int64($0.trimmingCharacters(in: .whitespaces)) }
            guard fields.count >= 2, let pts = fields[0], let dts = fields[1] else { return nil }
            return (pts, dts)
        }
    }

    @Test(arguments: cases)
    func everyPacketIsDecodedBeforeItIsShown(_ recipe: Fixtures.Recipe, _ preset: String) async throws {
        let source = try await Fixtures.url(recipe)
        let output = Fixtures.scratchFolder("coarse").appendingPathComponent("out.mp4")
        // --force-transcode: the H.264 source would otherwise be copied as it is. x265 on one thread
        // (`StageThreads`: its pool's hand-offs wait for time slices on a machine the test run loads
        // far past its cores; two of these ran past 300 s there with the default pool).
        let threads = preset.hasPrefix("HEVC") ? ["--threads", "1"] : []
        let result = try await ReelBinary.run(
            ["export", source.path, "--preset", preset, "--force-transcode", "-o", output.path] + threads)
        #expect(result.status == 0, "\(result.stderr)")
        let probed = try await ProbedFile.probe(source, countFrames: true)
        let sourceFrames = try #require(Int(probed.video?.nb_read_frames ?? ""))
        let packets = try await Self.packets(output)
        #expect(packets.count == sourceFrames, "\(packets.count) packets for \(sourceFrames) source frames")
        let late = packets.enumerated().filter { $0.element.dts > $0.element.pts }
        #expect(
            late.isEmpty, "decoded after shown (index, pts, dts): \(late.prefix(5).map { ($0.offset, $0.element) })")
        let unordered = zip(packets, packets.dropFirst()).filter { $0.1.dts <= $0.0.dts }
        #expect(unordered.isEmpty, "decode times not increasing: \(unordered.prefix(5))")
    }
}
