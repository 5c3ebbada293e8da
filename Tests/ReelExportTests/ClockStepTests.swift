import Foundation
import ReelExport
import TestSupport
import Testing

/// A `reel export` whose wall clock is stepped while it runs (libfaketime, its offset read from a file
/// the test rewrites): the watchdog, the elapsed time and the speed are on the monotonic clock, so a
/// step forward neither fails a moving export nor stretches its times, and a step back does not hide
/// a stall.
///
/// A stall is made by stopping the export's pipeline threads (those named `reel-pipeline`, the name
/// the pipeline's threads inherit) with ptrace (`ThreadFreezer`), while the watching thread
/// runs on: the heartbeat then stands still, as it does when a codec or the disk hangs. The step
/// comes while it stands still, so what the watchdog makes of it is not left to how the threads
/// happen to be scheduled.
@Suite("Wall-clock steps during an export", .tags(.process, .media), .serialized, .timeLimit(.minutes(5)))
struct ClockStepTests {
    static let faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

    struct Run {
        var events: [ExportEvent]
        var wallSeconds: Double
        var log: String
    }

    /// Exports 10 s of the long fixture under libfaketime with `--stall-timeout stall`; once it has
    /// made some progress, stops its pipeline for `freeze` seconds and meanwhile steps its wall clock
    /// to `offset`.
    static func export(stall: Int, freeze: Double, offset: String) async throws -> Run {
        try #require(FileManager.default.fileExists(atPath: faketime), "libfaketime is missing (Scripts/setup)")
        let source = try await Fixtures.url(Fixtures.long)
        let folder = Fixtures.scratchFolder("clock-step")
        let clock = folder.appendingPathComponent("faketime.rc")
        try "+0\n".write(to: clock, atomically: true, encoding: .utf8)
        let began = ContinuousClock.now
        let export = try ReelBinary.start(
            [
                "export", source.path, "--preset", "MediumQuality", "--force-transcode", "--time-range", "0-10",
                "--stall-timeout", "\(stall)", "-o", folder.appendingPathComponent("out.mp4").path, "--json",
            ],
            environment: [
                "LD_PRELOAD": faketime, "FAKETIME_TIMESTAMP_FILE": clock.path, "FAKETIME_CACHE_DURATION": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            ])
        let moving = await eventually(within: .seconds(120), every: .milliseconds(100)) { () -> Bool? in
            events(in: export.output).contains {
                if case .progress(let progress) = $0 { return progress.progress >= 0.1 }
                return false
            } ? true : nil
        }
        try #require(moving == true, "the export never got going: \(export.output)")
        let froze = try await ThreadFreezer.freeze(
            threadsNamed: "reel-pipeline", in: export.pid, for: freeze, thenWrite: (offset, clock),
            timeLimit: .seconds(60))
        try #require(froze.status == 0 && froze.stdout.contains("froze"), "\(froze.stdout)\(froze.stderr)")
        _ = try await export.exit(within: .seconds(180))
        let wall = (ContinuousClock.now - began).components
        return Run(
            events: events(in: export.output), wallSeconds: Double(wall.seconds) + Double(wall.attoseconds) / 1e18,
            log: export.output)
    }

    static func events(in output: String) -> [ExportEvent] {
        output.split(separator: "\n").compactMap { try? JSONDecoder().decode(ExportEvent.self, from: Data($0.utf8)) }
    }

    @Test func aStepForwardNeitherFailsAMovingExportNorStretchesItsTimes() async throws {
        // Still for 2 s of a 6 s limit, while the wall clock jumps an hour ahead.
        let run = try await Self.export(stall: 6, freeze: 2, offset: "+1h")
        let completed = run.events.compactMap { event -> ExportEvent.Completion? in
            if case .completed(let completion) = event { return completion }
            return nil
        }.first
        let result = try #require(completed?.result, "not completed: \(run.log)")
        #expect(result.elapsedSeconds > 2 && result.elapsedSeconds < run.wallSeconds, "\(result.elapsedSeconds) s")
        // The speed after the step is frames over monotonic seconds, not over an hour.
        let speeds = run.events.compactMap { event -> Double? in
            if case .progress(let progress) = event, progress.progress > 0.5 { return progress.fps }
            return nil
        }
        #expect(!speeds.isEmpty && speeds.allSatisfy { $0 > 1 }, "\(speeds)")
    }

    @Test func aStepBackDoesNotHideAStall() async throws {
        // Still for 6 s with a 2 s limit, while the wall clock jumps an hour back.
        let run = try await Self.export(stall: 2, freeze: 6, offset: "-1h")
        let failure = run.events.compactMap { event -> ExportEvent.Failure? in
            if case .failed(let failure) = event { return failure }
            return nil
        }.first
        #expect(failure?.error.code == .stalled, "\(run.log)")
        #expect(!run.events.contains { if case .completed = $0 { return true } else { return false } })
    }
}
