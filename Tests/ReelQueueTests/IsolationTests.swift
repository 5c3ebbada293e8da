import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// `reel work --isolate`: a crash inside an export's process fails only that attempt.
@Suite("Isolated exports", .serialized)
struct IsolationTests {
    /// The export processes a worker started (its children).
    static func children(of pid: Int32) -> [Int32] {
        let result = try? Tools.run("pgrep", ["-P", String(pid)])
        return (result?.stdout ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    static func waitForChild(of pid: Int32, seconds: Double = 30) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let child = children(of: pid).first { return child }
            usleep(50_000)
        }
        return nil
    }

    @Test func aCrashingExportFailsOnlyItsAttemptAndTheWorkerCarriesOn() throws {
        let spool = WorkerProcessTests.Spool()
        let crashing = try spool.submit(
            Fixtures.long, preset: "HighestQuality",
            extra: ["--time-range", "0-6", "--max-attempts", "2", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--isolate", "--jobs", "1"], environment: spool.environment)
        defer {
            worker.terminate()
            worker.waitUntilExit()
        }
        // Attempts 1 and 2 are killed with SIGSEGV, as a codec bug would: the job is poisonous.
        for attempt in 1...2 {
            let running = spool.waitFor(crashing) {
                $0.state == .exporting && $0.attempts == attempt && $0.progress > 0.02
            }
            #expect(running != nil, "attempt \(attempt) never ran")
            let child = try #require(Self.waitForChild(of: worker.processIdentifier))
            kill(child, SIGSEGV)
            _ = spool.waitFor(crashing) { $0.state != .exporting }
        }
        let failed = try #require(spool.waitFor(crashing) { $0.state.isTerminal })
        #expect(failed.state == .failed && failed.attempts == 2)
        #expect(failed.error?.code == "worker-crashed" && failed.error?.message.contains("signal 11") == true)
        // The same worker is still alive and runs the next job.
        #expect(worker.isRunning)
        let next = try spool.submit(Fixtures.landscape, preset: "LowQuality")
        #expect(spool.waitFor(next) { $0.state == .completed } != nil)
        #expect(spool.outputFiles().count == 1)
    }

    @Test func aKilledIsolatingWorkerTakesItsExportWithIt() throws {
        let spool = WorkerProcessTests.Spool()
        let id = try spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-6", "--force-transcode"])
        let worker = try ReelBinary.start(["work", "--isolate", "--jobs", "1"], environment: spool.environment)
        #expect(spool.waitFor(id) { $0.state == .exporting && $0.progress > 0.02 } != nil)
        let child = try #require(Self.waitForChild(of: worker.processIdentifier))
        kill(worker.processIdentifier, SIGKILL)
        worker.waitUntilExit()
        // The orphaned export notices within a fraction of a second and ends itself.
        let deadline = Date().addingTimeInterval(5)
        while kill(child, 0) == 0 && Date() < deadline { usleep(50_000) }
        #expect(kill(child, 0) != 0, "the export process outlived its worker")
        let again = try ReelBinary.start(["work", "--isolate", "--drain"], environment: spool.environment)
        again.waitUntilExit()
        let status = try #require(spool.status(id))
        #expect(status.state == .completed && status.attempts == 2)
        #expect(spool.outputFiles().count == 1)
    }
}
