import Foundation
import TestSupport
import Testing

@testable import ReelExport

/// A copy is verified without being decoded (its data is the source's, which may abort FFmpeg's
/// decoders), against what was written; an export killed mid-way leaves a temporary file the next
/// run removes, never one a live export is writing.
@Suite("Copy verification and leftovers", .tags(.process, .media), .timeLimit(.minutes(10)))
struct CopyVerificationTests {
    /// The fuzzer's 21 crashes: `reel export` of a damaged MPEG-4 Part 2 stream under Passthrough
    /// aborted in FFmpeg's decoder while verifying the copy, leaving `.out.mp4.reel-….partial`.
    @Test func aDamagedMPEG4StreamUnderPassthroughDoesNotAbortTheExport() async throws {
        let source = try await Fixtures.url(Fixtures.damagedMPEG4)
        // The premise: FFmpeg reads the damaged file as a raw MPEG-4 Part 2 stream.
        let probed = try await ProbedFile.probe(source)
        #expect(probed.format.format_name == "m4v" && probed.video?.codec_name == "mpeg4", "\(probed.format)")
        let folder = Fixtures.scratchFolder("damaged-mpeg4")
        let output = folder.appendingPathComponent("out.mp4")
        let result = try await ReelBinary.run(["export", source.path, "--preset", "Passthrough", "-o", output.path])
        // 134 was SIGABRT from `Assertion frame->buf[0] failed at libavcodec/decode.c:502`.
        #expect(result.status < 128, "exit \(result.status): \(result.stderr)")
        if result.status == 0 {
            #expect(contents(of: folder) == ["out.mp4"])
            #expect(try await ProbedFile.probe(output).video?.codec_name == "mpeg4")
        } else {
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("reel: error: "), "\(result.stderr)")
            #expect(contents(of: folder).isEmpty)
        }
    }

    /// A copy whose bytes were damaged after it was written fails, though it is never decoded: the
    /// bytes at the ends of its samples are not those written.
    @Test func aDamagedCopyFailsWithoutBeingDecoded() async throws {
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.gopsWithBFrames))
        let session = try ExportSession(asset: asset, presetName: "Passthrough")
        let folder = Fixtures.scratchFolder("damaged-copy")
        session.outputURL = folder.appendingPathComponent("out.mp4")
        session.outputFault = .corrupt
        await #expect(throws: ExportError.self) { try await session.export() }
        let error = try #require(session.error)
        #expect(error.code == .outputInvalid && !error.isRetryable, "\(error.message)")
        #expect(error.message.contains("is not what was written"), "\(error.message)")
        #expect(contents(of: folder).isEmpty)
    }

    /// A remux whose written index disagrees with what was handed to the muxer (a bit flipped in the
    /// video's sample sizes or chunk offsets after the write, or the media data cut short) is refused
    /// by `reel export` in one line, and nothing is left at the output path or beside it. The
    /// undamaged copy of the same file passes and ffprobe reads every packet of it.
    @Test(
        arguments: [
            ("sample-sizes", "sample 1 has"), ("chunk-offsets", "does not hold the bytes written"),
            ("truncate", "truncated"),
        ])
    func aCopyWhoseIndexDisagreesWithWhatWasMuxedIsRefused(fault: String, reason: String) async throws {
        let source = try await Fixtures.url(Fixtures.landscape)
        let folder = Fixtures.scratchFolder("copy-index-\(fault)")
        let output = folder.appendingPathComponent("out.mp4")
        let good = try await ReelBinary.run(["export", source.path, "--preset", "Passthrough", "-o", output.path])
        #expect(good.status == 0, "\(good.stderr)")
        let packets = try await ProbedFile.videoTimestamps(output)
        #expect(packets.count == (try await ProbedFile.videoTimestamps(source)).count && !packets.isEmpty)
        try FileManager.default.removeItem(at: output)

        var environment = ProcessInfo.processInfo.environment
        environment["REEL_TEST_OUTPUT_FAULT"] = fault
        let result = try await ReelBinary.run(
            ["export", source.path, "--preset", "Passthrough", "-o", output.path], environment: environment)
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].hasPrefix("reel: error: ") && lines[0].contains("failed verification")
                && lines[0].contains(reason), "\(result.stderr)")
        #expect(contents(of: folder).isEmpty)
    }

    @Test func theNextExportRemovesAKilledExportsLeftoverButNotALiveExportsFile() async throws {
        let folder = Fixtures.scratchFolder("leftover")
        let output = folder.appendingPathComponent("out.mp4")
        // An export killed mid-way (as an FFmpeg assertion or the OOM killer would) leaves its file.
        let long = try await Fixtures.url(Fixtures.long)
        let killed = try ReelBinary.start(["export", long.path, "--preset", "640x480", "-o", output.path])
        let leftover = await eventually(within: .seconds(120)) { () -> String? in
            contents(of: folder).first { TemporaryOutput.isTemporary($0, for: output) }
        }
        killed.signal(SIGKILL)
        try await killed.exit()
        let name = try #require(leftover, "no temporary file appeared: \(killed.output)")
        #expect(contents(of: folder) == [name])
        // A live export's file: its writer holds the lock.
        let live = TemporaryOutput.url(for: output, tag: "live")
        try Data("live".utf8).write(to: live)
        let descriptor = open(live.path, O_RDONLY | O_CLOEXEC)
        #expect(descriptor >= 0 && flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        defer { close(descriptor) }

        let source = try await Fixtures.url(Fixtures.landscape)
        let result = try await ReelBinary.run(["export", source.path, "--preset", "640x480", "-o", output.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(contents(of: folder).sorted() == [live.lastPathComponent, "out.mp4"])
    }
}
