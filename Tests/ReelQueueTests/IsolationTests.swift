import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// `reel work --isolate`: a crash inside an export's process fails only that attempt.
@Suite("Isolated exports", .tags(.process), .serialized, .timeLimit(.minutes(5)))
struct IsolationTests {
    /// The export processes a worker started (its children).
    static func children(of pid: Int32) async -> [Int32] {
        let result = try? await Tools.run("pgrep", ["-P", String(pid)])
        return (result?.stdout ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    static func waitForChild(of pid: Int32, seconds: Double = 30) async -> Int32? {
        await eventually(within: .seconds(seconds)) { await children(of: pid).first }
    }

    @Test func aCrashingExportFailsOnlyItsAttemptAndTheWorkerCarriesOn() async throws {
        let spool = WorkerProcessTests.Spool()
        let crashing = try await spool.submit(
            Fixtures.long, preset: "HighestQuality",
            extra: ["--time-range", "0-6", "--max-attempts", "2", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--isolate", "--jobs", "1"], environment: spool.environment)
        // Attempts 1 and 2 are killed with SIGSEGV, as a codec bug would: the job is poisonous.
        for attempt in 1...2 {
            let running = await spool.waitFor(crashing, seconds: 120) {
                $0.state == .exporting && $0.attempts == attempt && $0.progress > 0.02
            }
            #expect(running != nil, "attempt \(attempt) never ran")
            let child = try #require(await Self.waitForChild(of: worker.pid))
            kill(child, SIGSEGV)
            // The attempt has ended once the job left it: back to waiting, failed, or (on a busy
            // machine, between two polls) already exporting its next attempt.
            _ = await spool.waitFor(crashing, seconds: 120) { $0.state != .exporting || $0.attempts > attempt }
        }
        let failed = try #require(await spool.waitFor(crashing) { $0.state.isTerminal })
        #expect(failed.state == .failed && failed.attempts == 2)
        #expect(failed.error?.code == .workerCrashed && failed.error?.message.contains("signal 11") == true)
        // The same worker is still alive and runs the next job.
        #expect(worker.isRunning)
        let next = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        #expect(await spool.waitFor(next) { $0.state == .completed } != nil)
        #expect(spool.outputFiles().count == 1)
        await worker.stop()
    }

    @Test func aKilledIsolatingWorkerTakesItsExportWithIt() async throws {
        let spool = WorkerProcessTests.Spool()
        let id = try await spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-6", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--isolate", "--jobs", "1"], environment: spool.environment)
        #expect(await spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        let child = try #require(await Self.waitForChild(of: worker.pid))
        worker.signal(SIGKILL)
        try await worker.exit()
        // The orphaned export notices within a fraction of a second and ends itself.
        let gone = await eventually(within: .seconds(5)) { kill(child, 0) != 0 ? true : nil }
        #expect(gone != nil, "the export process outlived its worker")
        let again = try ReelBinary.start(["work", "--isolate", "--drain"], environment: spool.environment)
        try await again.exit()
        let status = try #require(spool.status(id))
        #expect(status.state == .completed && status.attempts == 2)
        #expect(spool.outputFiles().count == 1)
    }
}
