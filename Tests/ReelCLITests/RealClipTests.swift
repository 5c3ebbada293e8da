import Foundation
import TestSupport
import Testing

/// Real files with coarse time bases and old codecs, as users bring them (Debian's `opencv-doc`
/// examples, installed by Scripts/setup): the clips issue 31 saw fail with `pts < dts` after a full
/// encode. Each is estimated (`--estimate --json`) and exported at its own size (it fits the box) and
/// scaled; the output is read back with ffprobe: one packet per source frame, none decoded after it
/// is shown, the source's duration, and the estimate within a quarter of the file (its error printed).
@Suite("Real clips", .tags(.process, .media), .timeLimit(.minutes(10)))
struct RealClipTests {
    static let folder = "/usr/share/doc/opencv-doc/examples/data"

    static let cases: [(String, String)] = [
        // msmpeg4v3 768x576, 10 fps, time base 1/10, 79.5 s.
        ("vtest.avi", "1280x720"),
        // MPEG-4 Part 2 with B-frames, 720x528, time base 125/2997, AC-3 audio, 11.3 s.
        ("Megamind.avi", "1280x720"), ("Megamind.avi", "640x480"),
        // The same picture damaged (OpenCV's "buggy" sample), time base 1/30.
        ("Megamind_bugy.avi", "1280x720"),
        // Cinepak 320x240 at 15 fps with gaps, 29.6 s.
        ("tree.avi", "LowQuality"),
    ]

    @Test(arguments: cases)
    func aRealClipExportsWithTimestampsInOrder(_ name: String, _ preset: String) async throws {
        let source = URL(fileURLWithPath: Self.folder).appendingPathComponent(name)
        try #require(
            FileManager.default.fileExists(atPath: source.path),
            "\(source.path) is missing: Scripts/setup installs it (Debian's opencv-doc)")
        let output = Fixtures.scratchFolder("real").appendingPathComponent("out.mp4")
        let planned = try await ReelBinary.run(
            ["export", source.path, "--preset", preset, "--force-transcode", "-o", output.path, "--estimate", "--json"])
        #expect(planned.status == 0, "\(planned.stderr)")
        let plan = try JSONSerialization.jsonObject(with: Data(planned.stdout.utf8)) as? [String: Any]
        let estimate = try #require(plan?["estimatedBytes"] as? Int, "\(planned.stdout)")
        let result = try await ReelBinary.run(
            ["export", source.path, "--preset", preset, "--force-transcode", "-o", output.path])
        #expect(result.status == 0, "\(result.stderr)")
        let probed = try await ProbedFile.probe(source, countFrames: true)
        let sourceFrames = try #require(Int(probed.video?.nb_read_frames ?? ""))
        let packets = try await TimestampSweepTests.packets(output)
        #expect(packets.count == sourceFrames, "\(packets.count) packets for \(sourceFrames) source frames")
        let late = packets.filter { $0.dts > $0.pts }
        #expect(
            late.isEmpty,
            "\(late.count) packets decoded after they are shown, first \(late.first.map { "\($0)" } ?? "")")
        let written = try await ProbedFile.probe(output)
        let sourceSeconds = try #require(Double(probed.format.duration ?? ""))
        let seconds = try #require(Double(written.format.duration ?? ""))
        #expect(abs(seconds - sourceSeconds) < 0.2, "\(seconds) s written of \(sourceSeconds) s")
        let bytes = try #require(
            (try FileManager.default.attributesOfItem(atPath: output.path)[.size] as? NSNumber)?.intValue)
        let error = Double(estimate) / Double(bytes) - 1
        let line =
            "estimate \(name) \(preset): \(plan?["estimateMethod"] as? String ?? "?") \(estimate), wrote \(bytes) "
            + String(format: "(%+.1f %%)\n", error * 100)
        FileHandle.standardError.write(Data(line.utf8))
        #expect(abs(error) <= 0.25, "\(line)")
    }
}
