import Foundation
import TestSupport
import Testing

/// A ladder whose rung's encoder fails mid-run (`REEL_TEST_OUTPUT_FAULT=rung-encoder`, debug builds:
/// the last rung's encoder refuses its 30th frame of 60) fails as a whole: one line naming the rendition
/// and the cause, every thread ended (the process exits well within its time limit), and nothing at the
/// output path, no hidden folder beside it. H.264 rungs encode on the fan-out thread (x264's own frame
/// threads); HEVC rungs on threads of their own, two cores for two rungs.
@Suite("A ladder rung that fails", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LadderRungFailureTests {
    @Test(arguments: ["1280x720", "HEVC1920x1080"])
    func aRungWhoseEncoderFailsFailsTheLadderInOneLineAndLeavesNothing(_ preset: String) async throws {
        let source = try await Fixtures.url(Fixtures.ladderTiny)
        let parent = Fixtures.scratchFolder("ladder-rung-fault")
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--preset", preset, "--type", "hls", "--ladder", "320x180,160x90",
                "--segment-duration", "1", "--threads", "2", "-o", parent.appendingPathComponent("out").path,
            ], environment: ["REEL_TEST_OUTPUT_FAULT": "rung-encoder"], timeLimit: .seconds(120))
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(
            lines == ["reel: error: rendition v1 (160x90): the encoder refused frame 30: a fault injected by a test"],
            "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }
}
