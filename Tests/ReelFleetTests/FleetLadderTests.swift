import Foundation
import ReelExport
import ReelQueue
import TestSupport
import Testing

/// A ladder job through the PostgreSQL fleet: its spec, per-rendition progress and result travel
/// through the database (migration 2's `renditions` column), and a worker killed mid-ladder leaves no
/// hidden folder once another has rescued and finished the job.
@Suite("Ladders on the fleet", .tags(.process, .postgres), .serialized, .timeLimit(.minutes(10)))
struct FleetLadderTests {
    typealias Fleet = FleetProcessTests.Fleet

    @Test func aLadderKilledOnOneWorkerCompletesOnAnotherWithEveryFileListed() async throws {
        let fleet = try await Fleet.make()
        let id = try #require(
            try await fleet.submit(
                Fixtures.long, preset: "1920x1080",
                extra: ["type": "hls", "ladder": "640x360,320x180", "segmentDuration": "2", "timeRange": "0-10"]
            ).first)
        let doomed = try fleet.worker(["--jobs", "1", "--lease", "3"])
        let running = await fleet.waitFor(id) { $0.state == .exporting && $0.renditions != nil && $0.progress > 0.05 }
        #expect(running?.renditions?.map(\.name) == ["v0", "v1", "a"], "\(doomed.output.suffix(2000))")
        // The database has them too, not only the status file.
        let stored = try await fleet.status(id)
        #expect(stored?.renditions?.count == 3 && stored?.outputType == "hls", "\(String(describing: stored))")
        let survivor = try fleet.worker(["--jobs", "1", "--lease", "3", "--drain"])
        doomed.signal(SIGKILL)
        try await doomed.exit()
        #expect(try await survivor.exit(within: .seconds(300)).status == 0, "\(survivor.output.suffix(2000))")
        let status = try #require(try await fleet.status(id))
        #expect(status.state == .completed && status.attempts == 2, "\(status.state) after \(status.attempts)")
        #expect(FleetProcessTests.completed(in: survivor.output) == [id])
        let folder = URL(fileURLWithPath: status.output)
        // Only the published folder: the dead attempt's hidden one was removed.
        #expect(fleet.outputFiles() == [folder.lastPathComponent], "\(fleet.outputFiles())")
        let files = try #require(status.result?.ladder?.files)
        var onDisk: [String] = []
        let walker = FileManager.default.enumerator(atPath: folder.path)
        while let path = walker?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(
                atPath: folder.appendingPathComponent(path).path, isDirectory: &isDirectory)
            if !isDirectory.boolValue { onDisk.append(path) }
        }
        #expect(files == onDisk.sorted())
        #expect(status.renditions?.map(\.fraction) == [1, 1, 1])
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-show_entries", "stream=codec_type,width", "-of", "csv=p=0",
                folder.appendingPathComponent("master.m3u8").path,
            ])
        #expect(
            probe.status == 0 && probe.stdout.contains("video,640") && probe.stdout.contains("video,320"),
            "\(probe.stdout)\(probe.stderr)")
        #expect(fleet.statusFile(id)?.result?.ladder?.files == files)
    }
}
