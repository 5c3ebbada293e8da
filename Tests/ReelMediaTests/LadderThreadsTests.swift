import Foundation
import ReelSystem
import Synchronization
import TestSupport
import Testing

@testable import ReelMedia

/// HEVC rungs on threads of their own (`RungThreads`): with two cores for two rungs each x265
/// encoder (one core, no pool) runs on its own thread, fed through a bounded lane, instead of the
/// rungs taking turns on the fan-out thread. What each rung writes does not depend on it, a cancel
/// stops them all, and every rung is whole as ffprobe reads it.
@Suite("Ladder rung threads", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LadderThreadsTests {
    /// 8-bit HEVC rungs (640x360 and 320x180 unless told, x265 `ultrafast`; or H.264, x264's) of the
    /// first 3 s of `ladderSource` in 1 s segments, no audio, into `folder`, under a core budget of
    /// `threads`.
    static func plan(
        _ source: URL, into folder: URL, threads: Int, seconds: Double? = 3,
        sizes: [(Int, Int)] = [(640, 360), (320, 180)], codec: VideoEncoding.Codec = .hevc
    ) -> LadderPlan {
        let rungs = sizes.map { width, height in
            var encoding = VideoEncoding(
                codec: codec, width: width, height: height, rotation: 0, tenBit: false, color: .bt709,
                encoderPreset: "ultrafast", crf: 28, maxBitrate: nil, bufferSize: nil, maxFrameRate: nil,
                profile: codec == .hevc ? "main" : "high")
            encoding.alignedKeyframes = true
            return encoding
        }
        var plan = LadderPlan(
            inputPath: source.path, outputFolder: folder.path, videoStream: 0, rungs: rungs, audio: nil,
            segmentSeconds: 1, threads: threads)
        plan.endSeconds = seconds
        return plan
    }

    /// Runs `plan` on a thread of its own (it blocks), as `ExportSession` does.
    static func run(_ plan: LadderPlan, cancel: CancellationFlag = CancellationFlag(), cancelAt: Double? = nil)
        async throws -> LadderOutcome
    {
        try await onOwnThread(named: "ladder-test") { () throws(MediaError) -> LadderOutcome in
            try LadderTranscoder.run(plan, cancel: cancel) { update in
                if let cancelAt, update.fraction >= cancelAt { cancel.raise() }
            }
        }
    }

    /// Every file of a ladder's folder, by path relative to it.
    static func files(_ folder: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for rung in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let sub = folder.appendingPathComponent(rung)
            for name in try FileManager.default.contentsOfDirectory(atPath: sub.path) {
                files["\(rung)/\(name)"] = try Data(contentsOf: sub.appendingPathComponent(name))
            }
        }
        return files
    }

    /// On two cores the rungs encode on their own threads; on one, in turn on the fan-out thread,
    /// with the same x265 settings (one core, no pool). Both write the same bytes, segment for
    /// segment: the threads' timing decides nothing. ffprobe reads every frame of every rung.
    @Test func threadedRungsWriteTheSameBytesAsRungsInTurn() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let parent = Fixtures.scratchFolder("ladder-threads")
        var written: [[String: Data]] = []
        for threads in [2, 1] {
            let folder = parent.appendingPathComponent("budget-\(threads)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let outcome = try await Self.run(Self.plan(source, into: folder, threads: threads))
            #expect(outcome.video.count == 2 && outcome.frames == 90, "\(outcome.frames) frames")
            // Two encoders at once at most; none on threads of their own with one core.
            #expect(
                threads == 2 ? (1...2).contains(outcome.mostEncodingAtOnce) : outcome.mostEncodingAtOnce == 0,
                "\(threads) cores: \(outcome.mostEncodingAtOnce) at once")
            for track in outcome.video {
                #expect(track.files.segments.count == 3, "\(track.folder): \(track.files.segments.count) segments")
                var whole = try Data(contentsOf: folder.appendingPathComponent("\(track.folder)/init.mp4"))
                for segment in track.files.segments {
                    whole += try Data(contentsOf: folder.appendingPathComponent("\(track.folder)/\(segment.file)"))
                }
                let probe = try await Tools.run(
                    "ffprobe",
                    [
                        "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,width,nb_read_frames",
                        "-of", "csv=p=0", "-",
                    ], input: whole)
                #expect(probe.status == 0, "\(probe.stderr)")
                #expect(
                    probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "hevc,\(track.width ?? 0),90",
                    "\(track.folder): \(probe.stdout)")
            }
            written.append(try Self.files(folder))
        }
        #expect(written[0].keys.sorted() == written[1].keys.sorted())
        let differing = written[0].keys.sorted().filter { written[0][$0] != written[1][$0] }
        #expect(!written[0].isEmpty && differing.isEmpty, "differ: \(differing)")
    }

    /// Three rungs on two cores: each has a thread of its own, and never more than two encode at once
    /// (more runnable x265 encoders than cores make each wait for time slices).
    @Test func moreRungsThanCoresNeverEncodeMoreAtOnceThanCores() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let folder = Fixtures.scratchFolder("ladder-threads-three")
        let outcome = try await Self.run(
            Self.plan(source, into: folder, threads: 2, sizes: [(640, 360), (480, 270), (320, 180)]))
        #expect(outcome.video.count == 3 && outcome.frames == 90)
        #expect((1...2).contains(outcome.mostEncodingAtOnce), "\(outcome.mostEncodingAtOnce) at once")
    }

    /// A cancel while the rungs' threads encode stops every one of them: the run throws `cancelled`
    /// (within the suite's time limit, so no thread is left waiting on a lane), HDR ladders with SDR
    /// rungs beside them too.
    @Test(arguments: [false, true])
    func aCancelStopsEveryRungsThread(_ withSDRRungs: Bool) async throws {
        let folder = Fixtures.scratchFolder("ladder-threads-cancel")
        let plan =
            withSDRRungs
            ? Self.hdrPlan(try await Fixtures.url(Fixtures.ladderHLG), into: folder, threads: 2, seconds: nil)
            : Self.plan(try await Fixtures.url(Fixtures.ladderSource), into: folder, threads: 2, seconds: nil)
        await #expect(throws: MediaError.cancelled()) { _ = try await Self.run(plan, cancelAt: 0.2) }
    }

    /// One rung's encoder failing mid-run (`LadderPlan.rungFault`, debug builds: the last rung's,
    /// at its 30th frame of 60) is the one error the run throws, naming the rendition and the cause
    /// (not the other side's `pipelineStopped`), and the run returns: every rung's thread has been
    /// joined (HEVC: each rung on a thread of its own), or x264's rungs on the fan-out thread
    /// stopped, within the suite's time limit.
    @Test(arguments: [VideoEncoding.Codec.hevc, .h264])
    func aRungThatFailsMidRunIsTheOneErrorAndStopsEveryRung(_ codec: VideoEncoding.Codec) async throws {
        let source = try await Fixtures.url(Fixtures.ladderTiny)
        let folder = Fixtures.scratchFolder("ladder-threads-fault")
        var plan = Self.plan(
            source, into: folder, threads: 2, seconds: nil, sizes: [(320, 180), (160, 90)], codec: codec)
        plan.rungFault = 30
        let error = await #expect(throws: MediaError.self) { _ = try await Self.run(plan) }
        #expect(error?.kind == .internalFailure, "\(String(describing: error))")
        #expect(
            error?.message == "rendition v1 (160x90): the encoder refused frame 30: a fault injected by a test",
            "\(String(describing: error))")
    }

    /// `Fixtures.ladderHLG`'s first 2 s as 10-bit HEVC rungs keeping HLG (640x360 and 320x180, x265
    /// `ultrafast`) with H.264 SDR rungs of the same sizes beside them, tone-mapped (x264 `ultrafast`),
    /// in 1 s segments, no audio, under a core budget of `threads`.
    static func hdrPlan(_ source: URL, into folder: URL, threads: Int, seconds: Double? = 2) -> LadderPlan {
        let sizes = [(640, 360), (320, 180)]
        func rung(_ size: (Int, Int), sdr: Bool) -> VideoEncoding {
            var encoding = VideoEncoding(
                codec: sdr ? .h264 : .hevc, width: size.0, height: size.1, rotation: 0, tenBit: !sdr,
                color: sdr ? .toneMapped(ToneMapping(transfer: .hlg, peakLuminance: 1000)) : .keepSource,
                encoderPreset: "ultrafast", crf: 28, maxBitrate: nil, bufferSize: nil, maxFrameRate: nil,
                profile: sdr ? "high" : "main10")
            encoding.alignedKeyframes = true
            return encoding
        }
        var plan = LadderPlan(
            inputPath: source.path, outputFolder: folder.path, videoStream: 0,
            rungs: sizes.map { rung($0, sdr: false) }, audio: nil, segmentSeconds: 1, threads: threads)
        plan.sdrRungs = sizes.map { rung($0, sdr: true) }
        plan.endSeconds = seconds
        return plan
    }

    /// HDR rungs with SDR rungs beside them, four encoders on two cores: every rung, the H.264 ones
    /// too, on a thread of its own with one core's share (x264 with one thread), never more than two
    /// encoding at once; on one core, in turn on the fan-out thread with the same settings. Both
    /// write the same bytes (the tone mapping and scaling on the fan-out thread are in frame order
    /// whatever the threads do). ffprobe reads every frame of every rung: HEVC Main 10 in HLG, H.264
    /// in BT.709. Each rendition's progress, the SDR ones' too, reaches 1.
    @Test func sdrRungsBesideHDROnesShareTheCores() async throws {
        let source = try await Fixtures.url(Fixtures.ladderHLG)
        let parent = Fixtures.scratchFolder("ladder-threads-sdr")
        var written: [[String: Data]] = []
        for threads in [2, 1] {
            let folder = parent.appendingPathComponent("budget-\(threads)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let last = LastReport()
            let plan = Self.hdrPlan(source, into: folder, threads: threads)
            let outcome = try await onOwnThread(named: "ladder-test") { () throws(MediaError) -> LadderOutcome in
                try LadderTranscoder.run(plan, cancel: CancellationFlag()) { last.set($0) }
            }
            #expect(outcome.video.map(\.folder) == ["v0", "v1", "s0", "s1"] && outcome.frames == 60)
            #expect(
                threads == 2 ? (1...2).contains(outcome.mostEncodingAtOnce) : outcome.mostEncodingAtOnce == 0,
                "\(threads) cores: \(outcome.mostEncodingAtOnce) at once")
            let renditions = last.report?.renditions ?? []
            #expect(
                renditions.map(\.name) == ["v0", "v1", "s0", "s1"] && renditions.allSatisfy { $0.fraction == 1 },
                "\(renditions)")
            for track in outcome.video {
                var whole = try Data(contentsOf: folder.appendingPathComponent("\(track.folder)/init.mp4"))
                for segment in track.files.segments {
                    whole += try Data(contentsOf: folder.appendingPathComponent("\(track.folder)/\(segment.file)"))
                }
                let probe = try await Tools.run(
                    "ffprobe",
                    [
                        "-v", "error", "-count_frames", "-show_entries",
                        "stream=codec_name,width,pix_fmt,color_transfer,nb_read_frames", "-of", "csv=p=0", "-",
                    ], input: whole)
                #expect(probe.status == 0, "\(probe.stderr)")
                let expected =
                    track.folder.hasPrefix("s")
                    ? "h264,\(track.width ?? 0),yuv420p,bt709,60"
                    : "hevc,\(track.width ?? 0),yuv420p10le,arib-std-b67,60"
                #expect(
                    probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == expected,
                    "\(track.folder): \(probe.stdout)")
                #expect(track.videoRange == (track.folder.hasPrefix("s") ? "SDR" : "HLG"))
            }
            written.append(try Self.files(folder))
        }
        #expect(written[0].keys.sorted() == written[1].keys.sorted())
        let differing = written[0].keys.sorted().filter { written[0][$0] != written[1][$0] }
        #expect(!written[0].isEmpty && differing.isEmpty, "differ: \(differing)")
    }
}

/// The last progress report of a run.
final class LastReport: Sendable {
    private let value = Mutex<TranscodeProgress?>(nil)
    func set(_ report: TranscodeProgress) { value.withLock { $0 = report } }
    var report: TranscodeProgress? { value.withLock { $0 } }
}
