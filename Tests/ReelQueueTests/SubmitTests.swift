import Foundation
import ReelExport
import TestSupport
import Testing

@testable import ReelQueue

/// `reel submit` refuses at once what `reel export` would refuse before work, with the same line and
/// exit code, and a refused submission queues nothing.
@Suite("Submit", .tags(.process, .media), .serialized, .timeLimit(.minutes(5)))
struct SubmitTests {
    @Test(arguments: [
        (["--preset", "1280x720", "--type", "m4a"], Int32(65), "m4a"),
        (["--preset", "LowQuality", "--time-range", "5-9"], 64, "after the end"),
        (["--preset", "1280x720p"], 64, "did you mean '1280x720'"),
        (["--preset", "LowQuality", "--type", "mov", "-o", "OUT/x.mp4"], 64, "x.mp4"),
        (["--preset", "LowQuality", "--max-attempts", "0"], 64, "between 1 and 20"),
        (["--preset", "LowQuality", "--background", "#ff00"], 64, "cannot read the colour '#ff00'"),
    ])
    func aRefusedSubmissionMatchesExportAndQueuesNothing(_ arguments: [String], _ code: Int32, _ words: String)
        async throws
    {
        let spool = WorkerProcessTests.Spool()
        let source = try await Fixtures.url(Fixtures.landscape).path
        let options = arguments.map { $0.replacingOccurrences(of: "OUT", with: spool.outputs.path) }
        let submitted = try await ReelBinary.run(["submit", source] + options, environment: spool.environment)
        #expect(submitted.status == code, "\(submitted.stderr)")
        #expect(submitted.stderr.hasPrefix("reel: error: ") && submitted.stderr.contains(words), "\(submitted.stderr)")
        #expect(submitted.stderr.split(separator: "\n").count == 1)
        #expect(spool.store.all().isEmpty)
        // `reel export` says the same, in the same words, for what both check.
        if !arguments.contains("--max-attempts") {
            let exported = try await ReelBinary.run(
                ["export", source, "--estimate"] + options.filter { $0 != "--max-attempts" })
            // (An option's own check points at the command's help: `see 'reel submit --help'`.)
            let same = submitted.stderr.replacingOccurrences(of: "'reel submit --help'", with: "'reel export --help'")
            #expect(exported.status == code && exported.stderr == same, "\(exported.stderr)")
        }
    }

    /// An output folder the submitter cannot write: refused at submit when the worker is the same user
    /// (a spool this user owns), a warning with the queued job when it is not (a spool owned by
    /// another user, as the packaged one is by `reel`). A read-only mount stands in for the folder:
    /// root may write anything else (CI runs as root).
    @Test func anUnwritableOutputFolderIsRefusedOrWarnedAtSubmit() async throws {
        guard geteuid() == 0 else {
            Issue.record("mounting a read-only tmpfs needs root; run the suite as root (CI does)")
            return
        }
        let readOnly = Fixtures.scratchFolder("read-only-out")
        let mounted = try await Tools.run("mount", ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", readOnly.path])
        try #require(mounted.status == 0, "mount failed: \(mounted.stderr)")
        defer { _ = umount2(readOnly.path, Int32(MNT_DETACH)) }
        let source = try await Fixtures.url(Fixtures.landscape).path
        let spool = WorkerProcessTests.Spool()
        let refused = try await ReelBinary.run(
            ["submit", source, "--preset", "LowQuality", "-o", readOnly.path + "/x.mp4"], environment: spool.environment
        )
        #expect(refused.status == 74 && refused.stderr.contains("is not writable by root"), "\(refused.stderr)")
        #expect(refused.stderr.split(separator: "\n").count == 1)
        #expect(spool.store.all().isEmpty)
        // The same spool owned by another user: its worker may be able to; the job is queued with a warning.
        let other = WorkerProcessTests.Spool()
        _ = other.store
        #expect(chown(other.root.path, 65_534, 65_534) == 0)
        let warned = try await ReelBinary.run(
            ["submit", source, "--preset", "LowQuality", "-o", readOnly.path + "/x.mp4", "--json"],
            environment: other.environment)
        #expect(warned.status == 0, "\(warned.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(warned.stdout.utf8)) as? [String: Any])
        let warnings = try #require(report["warnings"] as? [String])
        #expect(warnings.count == 1 && warnings[0].contains("worker's user must be able to write it"), "\(warnings)")
        #expect(other.store.all().count == 1)
        // The warning stays with the job: in its status file (the spec, in full) and in `reel status`.
        let statusFile = try #require(report["statusFile"] as? String)
        let status = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: statusFile))) as? [String: Any]
        )
        #expect((status["spec"] as? [String: Any])?["warnings"] as? [String] == warnings, "\(status)")
        let id = try #require(report["id"] as? String)
        let shown = try await ReelBinary.run(["status", id], environment: other.environment)
        #expect(shown.stdout.contains("warning: ") && shown.stdout.contains("worker's user must be able to write it"))
    }

    @Test func aTextFileNamedMovIsRefusedAtSubmit() async throws {
        let spool = WorkerProcessTests.Spool()
        let text = Fixtures.scratchFolder("text").appendingPathComponent("notes.mov")
        try Data("not a video".utf8).write(to: text)
        let submitted = try await ReelBinary.run(
            ["submit", text.path, "--preset", "720p", "--output-dir", spool.outputs.path],
            environment: spool.environment)
        #expect(submitted.status == 65 && submitted.stderr.contains("notes.mov"), "\(submitted.stderr)")
        #expect(spool.store.all().isEmpty)
    }

    @Test func oneBadLineOrAssetQueuesNothingOfTheBatch() async throws {
        let spool = WorkerProcessTests.Spool()
        let source = try await Fixtures.url(Fixtures.landscape).path
        let manifest = """
            {"asset": "\(source)", "preset": "LowQuality", "outputDir": "\(spool.outputs.path)"}
            {"asset": "\(source)", "preset": "LowQuality", "outputdir": "\(spool.outputs.path)"}
            """
        let rejected = try await ReelBinary.run(
            ["submit", "--manifest", "-"], environment: spool.environment, input: Data(manifest.utf8))
        #expect(rejected.status == 64, "\(rejected.stderr)")
        #expect(rejected.stderr.contains("line 2: unknown key 'outputdir' (did you mean 'outputDir'?)"))
        #expect(spool.store.all().isEmpty)
        let assets = try await ReelBinary.run(
            ["submit", source, "/nonexistent/b.mp4", "--preset", "LowQuality", "--output-dir", spool.outputs.path],
            environment: spool.environment)
        #expect(assets.status == 65 && assets.stderr.contains("b.mp4"), "\(assets.stderr)")
        #expect(spool.store.all().isEmpty)
    }

    /// A manifest that cannot be read is EX_NOINPUT (66), as the README's table says.
    @Test func anUnreadableManifestExits66() async throws {
        let spool = WorkerProcessTests.Spool()
        let missing = Fixtures.scratchFolder("manifest").appendingPathComponent("jobs.jsonl").path
        let refused = try await ReelBinary.run(["submit", "--manifest", missing], environment: spool.environment)
        #expect(refused.status == 66, "\(refused.stderr)")
        #expect(refused.stderr == "reel: error: cannot read the manifest \(missing)\n", "\(refused.stderr)")
        #expect(spool.store.all().isEmpty)
    }

    @Test func overwriteReachesTheSpec() async throws {
        let spool = WorkerProcessTests.Spool()
        let plain = try await spool.submit(Fixtures.landscape, preset: "LowQuality")
        let replacing = try await spool.submit(Fixtures.landscape, preset: "LowQuality", extra: ["--overwrite"])
        let source = try await Fixtures.url(Fixtures.landscape).path
        let line =
            #"{"asset": "\#(source)", "preset": "LowQuality", "output": "\#(spool.outputs.path)/m.mp4", "overwrite": true}"#
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let id = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String)
        #expect(try spool.store.spec(plain)?.overwrite == false)
        #expect(try spool.store.spec(replacing)?.overwrite == true)
        #expect(try spool.store.spec(id)?.overwrite == true)
    }

    @Test(arguments: ["--isolate", "--no-isolate"])
    func aQueuedJobWithASizeLimitFitsIt(_ mode: String) async throws {
        let spool = WorkerProcessTests.Spool()
        let flag = try await spool.submit(Fixtures.fullHD20, preset: "1080p", extra: ["--max-size", "1MB"])
        let source = try await Fixtures.url(Fixtures.fullHD20).path
        let line =
            #"{"asset": "\#(source)", "preset": "720p", "output": "\#(spool.outputs.path)/m.mp4", "maxSize": "900KB"}"#
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let manifest = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String)
        #expect(try spool.store.spec(flag)?.fileLengthLimit == 1_000_000)
        #expect(try spool.store.spec(manifest)?.fileLengthLimit == 900_000)
        // An impossible limit is refused at submit, in the words of `reel export`.
        let refused = try await ReelBinary.run(
            ["submit", source, "--preset", "1080p", "--max-size", "50KB", "--output-dir", spool.outputs.path],
            environment: spool.environment)
        #expect(refused.status != 0 && refused.stderr.contains("smallest feasible size"), "\(refused.stderr)")
        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        try await worker.exit(within: .seconds(600))
        for (id, limit) in [(flag, 1_000_000), (manifest, 900_000)] {
            let status = try #require(spool.status(id))
            #expect(status.state == .completed, "\(status.error?.message ?? "")")
            let bytes = try FileManager.default.attributesOfItem(atPath: status.output)[.size] as? Int ?? .max
            #expect(bytes <= limit, "\(bytes) bytes over \(limit)")
            let probed = try await ProbedFile.probe(URL(fileURLWithPath: status.output))
            #expect(abs((probed.format.durationSeconds ?? 0) - 20) < 0.1)
        }
    }

    /// `--background` and the manifest's `background` reach the spec and, through the worker (in its
    /// own process or in a child), the export: a GIF's transparent pixels come out in that colour,
    /// as ffmpeg decodes the output.
    @Test(arguments: ["--isolate", "--no-isolate"])
    func aQueuedGIFIsFlattenedOntoItsBackground(_ mode: String) async throws {
        let spool = WorkerProcessTests.Spool()
        let flag = try await spool.submit(Fixtures.animatedGIF, preset: "640x480", extra: ["--background", "#ff0000"])
        let plain = try await spool.submit(Fixtures.animatedGIF, preset: "640x480")
        let source = try await Fixtures.url(Fixtures.animatedPNG).path
        let line =
            ##"{"asset": "\##(source)", "preset": "640x480", "output": "\##(spool.outputs.path)/m.mp4", "background": "#0000ff"}"##
        let piped = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: spool.environment, input: Data(line.utf8))
        let manifest = try #require(
            (try JSONSerialization.jsonObject(with: Data(piped.stdout.utf8)) as? [String: Any])?["id"] as? String,
            "\(piped.stderr)")
        // `reel status --json` shows the colour in the spec.
        let shown = try await ReelBinary.run(["status", flag, "--json"], environment: spool.environment)
        let spec = (try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])?["spec"]
        #expect((spec as? [String: Any])?["background"] as? String == "#ff0000", "\(shown.stdout)")

        let worker = try ReelBinary.start(["work", "--drain", "--jobs", "2", mode], environment: spool.environment)
        try await worker.exit(within: .seconds(300))
        for (id, colour) in [(flag, [255, 0, 0]), (plain, [0, 0, 0]), (manifest, [0, 0, 255])] {
            let status = try #require(spool.status(id))
            #expect(status.state == .completed, "\(status.error?.message ?? "")")
            let output = URL(fileURLWithPath: status.output)
            // Columns 0-39 are transparent in the source; 60-79 opaque (255, 0, 128 below row 30).
            let transparent = try await Fixtures.patch(output, x: 8, y: 40)
            #expect(zip(transparent, colour).allSatisfy { abs($0 - $1) <= 8 }, "\(id): \(transparent), not \(colour)")
            let opaque = try await Fixtures.patch(output, x: 60, y: 40)
            #expect(opaque[0] > 240 && opaque[1] < 10 && abs(opaque[2] - 128) < 10, "\(opaque)")
        }
    }
}
