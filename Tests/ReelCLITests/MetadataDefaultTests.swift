import Foundation
import TestSupport
import Testing

/// A service sets its metadata default once: `$REEL_METADATA` for every command, `reel work
/// --metadata` for the jobs that did not choose. `reel export` keeps AVFoundation's default (keep)
/// otherwise, and `--estimate` says which location and device keys will be written. Outputs are read
/// with ffprobe.
@Suite("A service's metadata default", .tags(.process, .media), .serialized, .timeLimit(.minutes(6)))
struct MetadataDefaultTests {
    static func tags(_ url: URL) async throws -> [String: String] {
        try await ProbedFile.probe(url).format.tags ?? [:]
    }

    static func hasLocationOrDevice(_ tags: [String: String]) -> Bool {
        tags.keys.contains { $0.contains("location") || $0.contains("make") || $0.contains("model") }
    }

    @Test func exportTakesTheDefaultFromTheEnvironmentAndSaysWhatItWrites() async throws {
        let folder = Fixtures.scratchFolder("metadata-export")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let plain = folder.appendingPathComponent("plain.mp4")
        #expect(try await ReelBinary.run(["export", source, "--preset", "LowQuality", "-o", plain.path]).status == 0)
        #expect(Self.hasLocationOrDevice(try await Self.tags(plain)), "keep is export's default")

        let shared = folder.appendingPathComponent("shared.mp4")
        let sharing = ["REEL_METADATA": "sharing"]
        let result = try await ReelBinary.run(
            ["export", source, "--preset", "LowQuality", "-o", shared.path], environment: sharing)
        #expect(result.status == 0, "\(result.stderr)")
        let tags = try await Self.tags(shared)
        #expect(!Self.hasLocationOrDevice(tags) && tags["creation_time"] != nil, "\(tags)")
        // An explicit choice wins over the service's default.
        let kept = folder.appendingPathComponent("kept.mp4")
        #expect(
            try await ReelBinary.run(
                ["export", source, "--preset", "LowQuality", "-o", kept.path, "--metadata", "keep"],
                environment: sharing
            ).status == 0)
        #expect(try await Self.tags(kept)["location"] == "+48.8584+002.2945/")

        // The estimate names the keys it will write.
        let keep = try await ReelBinary.run(["export", source, "--preset", "LowQuality", "--estimate"])
        #expect(
            keep.stdout.contains(
                "location: com.apple.quicktime.location.ISO6709, location; device: com.apple.quicktime.make, com.apple.quicktime.model"
            ), "\(keep.stdout)")
        let none = try await ReelBinary.run(
            ["export", source, "--preset", "LowQuality", "--estimate", "--json"], environment: sharing)
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(none.stdout.utf8)) as? [String: Any])
        let metadata = try #require(plan["metadata"] as? [String: Any])
        #expect(metadata["policy"] as? String == "sharing")
        #expect((metadata["location"] as? [String]) == [] && (metadata["device"] as? [String]) == [], "\(metadata)")

        let wrong = try await ReelBinary.run(
            ["export", source, "--preset", "LowQuality", "--estimate"], environment: ["REEL_METADATA": "secret"])
        #expect(wrong.status == 64 && wrong.stderr.contains("REEL_METADATA"), "\(wrong.stderr)")
    }

    /// A phone clip with the identifiers that tie it to its owner's library (QuickTime's content
    /// identifier, Photos' originating signature) beside a title and a capture date.
    static let identified = Fixtures.Recipe(
        "identified.mov",
        [
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30:duration=1", "-c:v", "libx264", "-preset", "ultrafast",
            "-pix_fmt", "yuv420p", "-metadata", "creation_time=2024-05-01T10:00:00Z",
            "-metadata", "com.apple.quicktime.title=Holiday",
            "-metadata", "com.apple.quicktime.content.identifier=9D2E4E5B-7A1C-4F0B-8F1E-0C2D3B4A5F60",
            "-metadata", "com.apple.photos.originating.signature=AbCdEf0123456789",
            "-metadata", "com.apple.quicktime.make=Apple", "-movflags", "+use_metadata_tags",
        ])

    /// What exiftool reads from a file's QuickTime `Keys` (tag name to value).
    static func keys(_ url: URL) async throws -> [String: String] {
        let result = try await Tools.run("exiftool", ["-json", "-a", "-G1", url.path])
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]]
        var keys: [String: String] = [:]
        for (name, value) in objects?.first ?? [:] where name.hasPrefix("Keys:") {
            keys[String(name.dropFirst("Keys:".count))] = "\(value)"
        }
        return keys
    }

    /// `sharing` shares nothing that ties the file to its owner's library: the identifiers go with
    /// the location and device keys (exiftool reads the outputs), the title and capture date stay; `keep`
    /// keeps them all. The re-encode and the copy (smart passthrough) write the same keys.
    @Test(arguments: [["--force-transcode"], []])
    func sharingDropsLibraryIdentifiers(_ extra: [String]) async throws {
        let folder = Fixtures.scratchFolder("metadata-identifiers")
        let source = try await Fixtures.url(Self.identified).path
        let shared = folder.appendingPathComponent("shared.mp4")
        let result = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "--metadata", "sharing", "-o", shared.path] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        let sharedKeys = try await Self.keys(shared)
        #expect(sharedKeys["ContentIdentifier"] == nil, "\(sharedKeys)")
        #expect(sharedKeys["ApplePhotosOriginatingSignature"] == nil, "\(sharedKeys)")
        #expect(sharedKeys["Make"] == nil, "\(sharedKeys)")
        #expect(sharedKeys["Title"] == "Holiday", "\(sharedKeys)")

        let kept = folder.appendingPathComponent("kept.mp4")
        let keep = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "--metadata", "keep", "-o", kept.path] + extra)
        #expect(keep.status == 0, "\(keep.stderr)")
        let keptKeys = try await Self.keys(kept)
        #expect(keptKeys["ContentIdentifier"] == "9D2E4E5B-7A1C-4F0B-8F1E-0C2D3B4A5F60", "\(keptKeys)")
        #expect(keptKeys["ApplePhotosOriginatingSignature"] == "AbCdEf0123456789", "\(keptKeys)")

        // The plan says so before anything is written.
        let estimate = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "--metadata", "sharing", "--estimate", "--json"] + extra)
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(estimate.stdout.utf8)) as? [String: Any])
        let written = try #require((plan["metadata"] as? [String: Any])?["written"] as? [String: String])
        #expect(!written.keys.contains { $0.contains("identifier") || $0.contains("signature") }, "\(written)")
        #expect((plan["metadata"] as? [String: Any])?["identifiers"] as? [String] == [], "\(plan)")
        // Under keep, the plan and the result name the identifiers written.
        let keptPlan = try await ReelBinary.run(
            ["export", source, "--preset", "640x480", "--metadata", "keep", "--estimate", "--json"] + extra)
        let keptObject = try #require(
            try JSONSerialization.jsonObject(with: Data(keptPlan.stdout.utf8)) as? [String: Any])
        let named = try #require((keptObject["metadata"] as? [String: Any])?["identifiers"] as? [String])
        #expect(named.contains("com.apple.quicktime.content.identifier"), "\(named)")
        #expect(
            keep.stdout.contains("com.apple.quicktime.content.identifier"), "the human line names it: \(keep.stdout)")
    }

    /// A job that did not choose takes its worker's default (`--metadata`, or `$REEL_METADATA`), in an
    /// isolated export process and in the worker's own; a job that chose keeps its choice.
    @Test(arguments: [["--metadata", "sharing"], ["--no-isolate"]])
    func aWorkerAppliesItsDefaultToJobsThatDidNotChoose(_ workerOptions: [String]) async throws {
        let spool = Fixtures.scratchFolder("metadata-spool")
        let outputs = Fixtures.scratchFolder("metadata-out")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let environment = ["REEL_SPOOL": spool.path]
        func submit(_ extra: [String]) async throws -> (id: String, output: String, spec: [String: Any]) {
            let result = try await ReelBinary.run(
                ["submit", source, "--preset", "LowQuality", "--output-dir", outputs.path, "--json"] + extra,
                environment: environment)
            let line = try #require(AnswersTests.objects(result.stdout).first, "\(result.stderr)")
            let id = try #require(line["id"] as? String)
            let data = try #require(FileManager.default.contents(atPath: spool.path + "/status/\(id).json"))
            let status = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            return (id, try #require(line["output"] as? String), try #require(status["spec"] as? [String: Any]))
        }
        let unchosen = try await submit([])
        #expect(unchosen.spec["metadataChosen"] as? Bool == false, "\(unchosen.spec)")
        let chosen = try await submit(["--metadata", "keep"])
        #expect(chosen.spec["metadataChosen"] as? Bool == true && chosen.spec["metadata"] as? String == "keep")

        // The worker's default: the option, or (with --no-isolate here) the environment.
        var workerEnvironment = environment
        if !workerOptions.contains("--metadata") { workerEnvironment["REEL_METADATA"] = "sharing" }
        let worker = try await ReelBinary.run(
            ["work", "--drain", "--jobs", "1"] + workerOptions, environment: workerEnvironment,
            timeLimit: .seconds(240))
        #expect(worker.status == 0, "\(worker.stderr)")
        let unchosenTags = try await Self.tags(URL(fileURLWithPath: unchosen.output))
        #expect(!Self.hasLocationOrDevice(unchosenTags), "\(unchosenTags)")
        #expect(try await Self.tags(URL(fileURLWithPath: chosen.output))["location"] == "+48.8584+002.2945/")

        // A submitter's $REEL_METADATA is a choice made at submit.
        let result = try await ReelBinary.run(
            ["submit", source, "--preset", "LowQuality", "--output-dir", outputs.path, "--json"],
            environment: environment.merging(["REEL_METADATA": "strip"]) { $1 })
        let id = try #require(AnswersTests.objects(result.stdout).first?["id"] as? String, "\(result.stderr)")
        let data = try #require(FileManager.default.contents(atPath: spool.path + "/status/\(id).json"))
        let spec = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["spec"] as? [String: Any]
        #expect(spec?["metadata"] as? String == "strip" && spec?["metadataChosen"] as? Bool == true)
    }
}
