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
