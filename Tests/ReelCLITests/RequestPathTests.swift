import Foundation
import TestSupport
import Testing

/// One request path: `reel export`, `reel submit` and a manifest line share one set of export options
/// (`ExportOptions`, `ExportRequest`). Every option in the "Export options" section has the same name,
/// help and value in both commands, the same key (camelCase) in a manifest with the same effect on
/// the queued job as the flag, and the same refusal in the same words everywhere.
@Suite("One request path", .tags(.process, .media), .serialized, .timeLimit(.minutes(6)))
struct RequestPathTests {
    /// One option of a command, as `--experimental-dump-help` describes it.
    struct Option: Equatable, CustomStringConvertible {
        var name: String
        var kind: String
        var valueName: String?
        var help: String?
        var description: String { "--\(name)" }
    }

    /// The options of `command` listed under "Export options".
    static func exportOptions(of command: String) async throws -> [Option] {
        let result = try await ReelBinary.run([command, "--experimental-dump-help"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let arguments = try #require((json["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        return arguments.filter { $0["sectionTitle"] as? String == "Export options" }.compactMap { argument in
            let names = (argument["names"] as? [[String: Any]]) ?? []
            guard let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String else {
                return nil
            }
            return Option(
                name: long, kind: argument["kind"] as? String ?? "", valueName: argument["valueName"] as? String,
                help: argument["abstract"] as? String)
        }
    }

    /// `time-range` → `timeRange`.
    static func key(_ option: String) -> String {
        let words = option.split(separator: "-")
        return words.enumerated().map { $0.offset == 0 ? String($0.element) : $0.element.capitalized }.joined()
    }

    /// A value for each option that changes the queued job, and one that is refused (value options).
    /// An option added to `ExportOptions` needs a line here, or the test says which is missing.
    static let samples: [String: (good: String?, bad: String?)] = [
        "preset": ("MediumQuality", "720px"),
        "type": ("mov", "mkv"),
        "output": ("named.mp4", "named.mkv"),
        "force-extension": (nil, nil),
        "time-range": ("0.2-0.8", "soon"),
        "metadata": ("strip", "public"),
        "no-network-optimization": (nil, nil),
        "force-transcode": (nil, nil),
        "allow-audio-only": (nil, nil),
        "max-size": ("50MB", "huge"),
        "quality": ("ssim:0.98", "ssim:2"),
        "background": ("white", "orange"),
        "overwrite": (nil, nil),
        // A resource is chosen only for a library asset: with this test's path asset, every entry
        // point refuses it in the same words (LibraryExportTests queues library assets).
        "resource": (nil, "pairedVideo"),
        "save-to-library": (nil, nil),
        "keep-content-identifier": (nil, nil),
        "poster": (nil, nil),
        // Only these ladder options' refusal is checked here (QueuedLadderTests queues ladders).
        "ladder": (nil, "1280x"),
        "segment-duration": (nil, "0"),
        "manifests": (nil, "dash"),
        // A ladder's flag: checked on a ladder (`ladderFlags`).
        "no-sdr-rungs": (nil, nil),
    ]

    /// What a flag that goes with a ladder is given with, as flags and as keys.
    static let ladderFlags = (["--type", "hls", "--ladder", "320x180"], ["type": "hls", "ladder": "320x180"])

    @Test func exportAndSubmitShareTheExportOptions() async throws {
        let export = try await Self.exportOptions(of: "export")
        let submit = try await Self.exportOptions(of: "submit")
        #expect(export.count >= 12, "\(export)")
        #expect(export == submit)
        let missing = export.map(\.name).filter { Self.samples[$0] == nil }
        #expect(missing.isEmpty, "no sample in RequestPathTests.samples for \(missing)")
    }

    /// Each option, as a flag and as a manifest key, queues the same job, which differs from the job
    /// without it; a bad value is refused by export, submit and the manifest in the same words.
    @Test func everyOptionMeansTheSameAsAFlagAndAsAManifestKey() async throws {
        let options = try await Self.exportOptions(of: "submit")
        let spool = Fixtures.scratchFolder("request-path-spool")
        let outputs = Fixtures.scratchFolder("request-path-out")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let environment = ["REEL_SPOOL": spool.path]

        func spec(of stdout: String) throws -> [String: Any] {
            let line = try #require(AnswersTests.objects(stdout).first, "submit said: \(stdout)")
            let id = try #require(line["id"] as? String, "\(line)")
            let data = try #require(FileManager.default.contents(atPath: spool.path + "/status/\(id).json"))
            var spec = try #require(
                (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["spec"] as? [String: Any])
            // The output's name carries the job id, or the tag that keeps two jobs' files apart.
            spec["output"] = (spec["output"] as? String)?.replacingOccurrences(of: id, with: "ID")
                .replacingOccurrences(of: "/flag-", with: "/").replacingOccurrences(of: "/key-", with: "/")
            return spec
        }
        func submitFlags(_ flags: [String]) async throws -> ToolResult {
            try await ReelBinary.run(["submit", source, "--json"] + flags, environment: environment)
        }
        func submitLine(_ keys: [String: Any]) async throws -> ToolResult {
            var line: [String: Any] = ["asset": source]
            line.merge(keys) { $1 }
            let data = try JSONSerialization.data(withJSONObject: line)
            return try await ReelBinary.run(
                ["submit", "--manifest", "-", "--json"], environment: environment, input: data)
        }
        func equal(_ a: [String: Any], _ b: [String: Any]) -> Bool {
            let encode = { (object: [String: Any]) in
                try? JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
            }
            return encode(a) != nil && encode(a) == encode(b)
        }

        let base: ([String], [String: Any]) = (
            ["--preset", "LowQuality", "--output-dir", outputs.path],
            ["preset": "LowQuality", "outputDir": outputs.path]
        )
        let plain = try spec(of: try await submitFlags(base.0 + ["--overwrite"]).stdout)
        var checked = 0
        for option in options {
            guard let sample = Self.samples[option.name] else { continue }
            var flags = base.0
            var keys = base.1
            let key = Self.key(option.name)
            // Two jobs may not share an output: a named one is tagged by how it was asked for.
            func named(_ file: String) {
                flags.removeLast(2)
                keys["outputDir"] = nil
                flags += ["--output", outputs.appendingPathComponent("flag-" + file).path]
                keys["output"] = outputs.appendingPathComponent("key-" + file).path
            }
            if option.kind != "flag" && sample.good == nil {
                // Only its refusal is checked, below.
            } else if option.kind == "flag" {
                if option.name == "keep-content-identifier" {
                    // Refused without saving to the library.
                    flags.append("--save-to-library")
                    keys["saveToLibrary"] = true
                }
                if option.name == "no-sdr-rungs" {
                    // Refused without a ladder.
                    flags += Self.ladderFlags.0
                    for (name, value) in Self.ladderFlags.1 { keys[name] = value }
                }
                if option.name == "force-extension" {
                    // The type is mov, the name keeps .mp4: refused without the flag.
                    named("forced.mp4")
                    flags += ["--type", "mov"]
                    keys["type"] = "mov"
                }
                flags.append("--\(option.name)")
                keys[key] = true
            } else if option.name == "output", let value = sample.good {
                named(value)
            } else if let value = sample.good {
                flags += ["--\(option.name)", value]
                keys[key] = value
            }
            // Every job may replace its output: the flag and the line name the same file.
            if option.name != "overwrite" {
                flags.append("--overwrite")
                keys["overwrite"] = true
            }
            if option.kind == "flag" || sample.good != nil {
                let byFlag = try await submitFlags(flags)
                let byKey = try await submitLine(keys)
                #expect(byFlag.status == 0 && byKey.status == 0, "\(option): \(byFlag.stderr) \(byKey.stderr)")
                guard byFlag.status == 0, byKey.status == 0 else { continue }
                let a = try spec(of: byFlag.stdout)
                let b = try spec(of: byKey.stdout)
                #expect(equal(a, b), "\(option): as a flag \(a), as \"\(key)\" \(b)")
                // Against the job without it (keeping the content identifier: a job that saves).
                var changed = !equal(a, plain)
                if option.name == "overwrite" {
                    changed = !equal(a, try spec(of: try await submitFlags(base.0).stdout))
                } else if option.name == "keep-content-identifier" {
                    let saving = base.0 + ["--save-to-library", "--overwrite"]
                    changed = !equal(a, try spec(of: try await submitFlags(saving).stdout))
                } else if option.name == "no-sdr-rungs" {
                    let ladder = base.0 + Self.ladderFlags.0 + ["--overwrite"]
                    changed = !equal(a, try spec(of: try await submitFlags(ladder).stdout))
                }
                #expect(changed, "\(option) changed nothing in the job: \(a)")
            }
            checked += 1

            // A bad value: the same words from export, submit and a manifest line.
            guard let bad = sample.bad else { continue }
            let badValue = option.name == "output" ? outputs.appendingPathComponent(bad).path : bad
            let exported = try await ReelBinary.run(
                ["export", source, "--estimate", "--preset", "LowQuality", "--\(option.name)", badValue])
            let submitted = try await submitFlags(["--preset", "LowQuality", "--\(option.name)", badValue])
            var line = base.1
            line[key] = badValue
            let manifest = try await submitLine(line)
            let words = exported.stderr.replacingOccurrences(of: "reel: error: ", with: "")
                .replacingOccurrences(of: " (see 'reel export --help')", with: "")
                .trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(exported.status != 0 && !words.isEmpty, "\(option) \(bad) was accepted by export")
            #expect(
                submitted.stderr.replacingOccurrences(of: "'reel submit --help'", with: "'reel export --help'")
                    == exported.stderr, "\(option): submit said \(submitted.stderr), export \(exported.stderr)")
            #expect(manifest.stderr.contains("line 1: \(words)"), "\(option): manifest said \(manifest.stderr)")
        }
        #expect(checked == options.count, "checked \(checked) of \(options.count) options")
    }
}
