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

    @Test("library import --live into the fleet's library: one Live Photo recorded in PostgreSQL, kept by rescans")
    func liveImportRecordedInPostgres() async throws {
        let fleet = try await FleetProcessTests.Fleet.make()
        let state = Fixtures.scratchFolder("fleet-live-state")
        let environment = fleet.environment.merging(["XDG_STATE_HOME": state.path, "REEL_LIBRARY": ""]) { $1 }
        let sources = Fixtures.scratchFolder("fleet-live-sources")
        // A JPEG still and a 2 s movie with no identifiers, different names, taken years apart.
        let still = sources.appendingPathComponent("still.jpg")
        let madeStill = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "color=c=teal:s=320x240", "-frames:v", "1", "-f", "mjpeg",
                still.path,
            ])
        try #require(madeStill.status == 0, "\(madeStill.stderr)")
        let movie = sources.appendingPathComponent("clip.mov")
        let madeMovie = try await Tools.run(
            "ffmpeg",
            [
                "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=2", "-c:v", "libx264",
                "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "use_metadata_tags", "-metadata",
                "com.apple.quicktime.creationdate=2023-08-01T09:00:00+0000", "-f", "mov", movie.path,
            ])
        try #require(madeMovie.status == 0, "\(madeMovie.stderr)")
        let target = Fixtures.scratchFolder("fleet-live-photos")

        let imported = try await ReelBinary.run(
            ["library", "import", still.path, movie.path, "--live", "--into", target.path, "--json"],
            environment: environment)
        #expect(imported.status == 0, "\(imported.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(imported.stdout.utf8)) as? [String: Any], "\(imported.stdout)")
        let id = try #require((report["insertedLocalIdentifiers"] as? [String])?.first, "\(report)")
        // The pairing is the asset's row in the fleet's database (read with psql, not through Reel).
        let recorded =
            "SELECT pairing || ' ' || paired_video_path FROM reel_library_asset WHERE local_identifier = '\(id)'"
        let movieCopy = target.appendingPathComponent("clip.mov").path
        #expect(try await fleet.sql(recorded) == "imported \(movieCopy)")
        #expect(try await fleet.sql("SELECT count(*) FROM reel_library_asset") == "1")

        // A rescan that reads both files again keeps it.
        let later = Date(timeIntervalSinceNow: 3600)
        for name in ["still.jpg", "clip.mov"] {
            try FileManager.default.setAttributes(
                [.modificationDate: later], ofItemAtPath: target.appendingPathComponent(name).path)
        }
        let scan = try await ReelBinary.run(["library", "scan", "--json", target.path], environment: environment)
        #expect(scan.status == 0, "\(scan.stderr)")
        let filesRead = "\"filesRead\":2"
        #expect(scan.stdout.contains(filesRead), "\(scan.stdout)")
        #expect(try await fleet.sql(recorded) == "imported \(movieCopy)")
        #expect(try await fleet.sql("SELECT count(*) FROM reel_library_asset") == "1")
        let shown = try await ReelBinary.run(["library", "show", id, "--json"], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        let photoLive = "\"photoLive\""
        #expect(shown.stdout.contains(photoLive), "\(shown.stdout)")
    }
}
