import Foundation
import TestSupport
import Testing

/// Every way a worker on the spool gets stopped, isolated and in process: only a cancel cancels; a
/// stop hands the job back (or lets it finish), a crash costs an attempt, and the job completes
/// exactly once with nothing left beside its output (`StopDrill`).
@Suite("Stopping a spool worker", .tags(.process), .serialized, .timeLimit(.minutes(10)))
struct StopMatrixTests {
    func drill(_ mode: String) async throws -> (StopDrill, String) {
        let spool = WorkerProcessTests.Spool()
        // A job that runs a few seconds on one thread, so each stop lands in the middle of it.
        let id = try await spool.submit(
            Fixtures.long, preset: "HighestQuality", extra: ["--time-range", "0-3", "--force-transcode"])
        let drill = StopDrill(
            work: ["work", "--jobs", "1", mode], environment: spool.environment,
            statusFolder: spool.root.appendingPathComponent("status"), outputs: spool.outputs)
        return (drill, id)
    }

    @Test(arguments: WorkerStop.allCases)
    func isolated(_ stop: WorkerStop) async throws {
        let (drill, id) = try await drill("--isolate")
        try await drill.run(stop, job: id)
    }

    @Test(arguments: WorkerStop.inProcess)
    func inProcess(_ stop: WorkerStop) async throws {
        let (drill, id) = try await drill("--no-isolate")
        try await drill.run(stop, job: id)
    }
}
