import Foundation
import TestSupport
import Testing

/// Every way a worker on PostgreSQL gets stopped, isolated and in process (`StopDrill`): only a cancel
/// cancels; a stop hands the job back (or lets it finish), a crash costs an attempt and is rescued
/// once the lease (4 s here) has run out, and the job completes exactly once with nothing left beside
/// its output.
@Suite("Stopping a fleet worker", .tags(.process, .postgres), .serialized, .timeLimit(.minutes(10)))
struct FleetStopTests {
    func drill(_ mode: String) async throws -> (StopDrill, String) {
        let fleet = try await FleetProcessTests.Fleet.make()
        // A job that runs a few seconds, so each stop lands in the middle of it.
        let id = try #require(
            try await fleet.submit(
                Fixtures.long, preset: "HighestQuality",
                extra: ["timeRange": "0-3", "forceTranscode": "true"]
            ).first)
        let drill = StopDrill(
            work: ["work", "--jobs", "1", "--lease", "4", "--rescue-interval", "0.5", mode],
            environment: fleet.environment, statusFolder: fleet.statusFolder, outputs: fleet.outputs)
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
