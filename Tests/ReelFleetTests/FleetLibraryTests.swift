import Foundation
import ReelQueue
import TestSupport
import Testing

/// The photo library when the queue is in PostgreSQL: `reel library …`, `submit library:<id>` and a
/// worker process all reach the library's tables in the queue's database (no SQLite file anywhere),
/// so any machine of the fleet resolves an identifier and saves its output back.
@Suite("The photo library on a PostgreSQL queue", .tags(.process, .postgres), .serialized, .timeLimit(.minutes(10)))
struct FleetLibraryTests {
    @Test("a library:<id> job submitted to the fleet is resolved by a worker process and saved back")
    func libraryJobResolvedAndSavedByAWorker() async throws {
        let fleet = try await FleetProcessTests.Fleet.make()
        let state = Fixtures.scratchFolder("fleet-library-state")
        // No --library and no REEL_LIBRARY: the queue's database decides; the default SQLite file
        // (in XDG_STATE_HOME) must never appear.
        let environment = fleet.environment.merging(["XDG_STATE_HOME": state.path, "REEL_LIBRARY": ""]) { $1 }
        let root = Fixtures.scratchFolder("fleet-library-photos")
        let movie = root.appendingPathComponent("IMG_0001.MOV")
        let made = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-c:v", "libx264",
                "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "use_metadata_tags", "-metadata",
                "com.apple.quicktime.creationdate=2020-05-04T18:39:11-0400", "-f", "mov", movie.path,
            ])
        try #require(made.status == 0, "\(made.stderr)")

        let scan = try await ReelBinary.run(["library", "scan", "--json", root.path], environment: environment)
        #expect(scan.status == 0, "\(scan.stderr)")
        let listed = try await ReelBinary.run(["library", "list", "--json"], environment: environment)
        #expect(listed.status == 0, "\(listed.stderr)")
        let assets = try listed.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        try #require(assets.count == 1, "\(listed.stdout)")
        let id = try #require(assets[0]["localIdentifier"] as? String)
        #expect(try await fleet.sql("SELECT local_identifier FROM reel_library_asset") == id)

        let submitted = try await ReelBinary.run(
            [
                "submit", "library:\(id)", "--preset", "LowQuality", "--output-dir", fleet.outputs.path,
                "--save-to-library", "--json",
            ], environment: environment)
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let job = try #require(
            (try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(submitted.stdout)")

        let worker = try await ReelBinary.run(
            ["work", "--drain", "--jobs", "1"], environment: environment, timeLimit: .seconds(300))
        #expect(worker.status == 0, "\(worker.stderr)")
        let status = try #require(try await fleet.status(job))
        #expect(status.state == .completed, "\(status.state): \(status.error?.message ?? "")")
        let saved = try #require(status.result?.savedLocalIdentifier, "no asset saved")
        #expect(saved != id)
        let spec = try #require(status.spec)
        #expect(spec.library?.identifier == id, "the job records the identifier it resolved")

        // The new asset is the output file, in the fleet's library (read with psql, not through Reel).
        let output = spec.output
        #expect(
            try await fleet.sql("SELECT path FROM reel_library_asset WHERE local_identifier = '\(saved)'") == output)
        #expect(try await fleet.sql("SELECT count(*) FROM reel_library_asset") == "2")
        // The output is a real 2 s video (ffprobe), and `reel library show` finds it by its identifier.
        let probe = try await Tools.run(
            "ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", output])
        let seconds = try #require(Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(abs(seconds - 2) < 0.2, "\(seconds) s")
        let shown = try await ReelBinary.run(["library", "show", saved, "--json"], environment: environment)
        #expect(shown.status == 0 && shown.stdout.contains(output), "\(shown.stdout) \(shown.stderr)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: state.path)
        #expect(!files.contains { $0.hasSuffix("library.sqlite") }, "a SQLite library was made: \(files)")
    }
}
