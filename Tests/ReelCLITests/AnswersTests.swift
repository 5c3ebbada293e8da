import Foundation
import TestSupport
import Testing

/// Answers a program can read (`--json` refusals and results with every key, clamped ranges, no-video,
/// output errors naming the user's file) and a command line that never silently does nothing.
@Suite("Answers a program can read", .tags(.process, .media), .timeLimit(.minutes(6)))
struct AnswersTests {
    /// Each stdout line that is a JSON object.
    static func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// `reel export --json`'s error for the same request: code, message and retryable.
    static func exportError(_ arguments: [String]) async throws -> [String: Any] {
        let result = try await ReelBinary.run(["export"] + arguments + ["--json"])
        let last = try #require(objects(result.stdout).last, "export said: \(result.stderr)")
        #expect(last["event"] as? String == "failed")
        return try #require(last["error"] as? [String: Any])
    }

    static func same(_ a: [String: Any]?, _ b: [String: Any]?) -> Bool {
        guard let a, let b else { return false }
        return a["code"] as? String == b["code"] as? String && a["message"] as? String == b["message"] as? String
            && a["retryable"] as? Bool == b["retryable"] as? Bool
    }

    @Test func submitJSONPrintsEachRefusalAsExportWould() async throws {
        let spool = Fixtures.scratchFolder("answers-spool")
        let outputs = Fixtures.scratchFolder("answers-out")
        let text = outputs.appendingPathComponent("notes.mov")
        try Data("not a video".utf8).write(to: text)
        let source = try await Fixtures.url(Fixtures.landscape).path
        // Two refused assets and a good one: one object per refused job, and nothing queued.
        let result = try await ReelBinary.run(
            [
                "submit", "/nonexistent/clip.mp4", text.path, source, "--preset", "LowQuality", "--output-dir",
                outputs.path, "--json",
            ], environment: ["REEL_SPOOL": spool.path])
        #expect(result.status == 65, "\(result.stderr)")
        let lines = Self.objects(result.stdout)
        #expect(lines.count == 2, "\(result.stdout)")
        for (line, asset) in zip(lines, ["/nonexistent/clip.mp4", text.path]) {
            #expect(line["asset"] as? String == asset)
            #expect(line["id"] is NSNull && line["line"] is NSNull && line["created"] as? Bool == false)
            let expected = try await Self.exportError([asset, "--preset", "LowQuality", "-o", outputs.path + "/x.mp4"])
            #expect(Self.same(line["error"] as? [String: Any], expected), "\(line) vs \(expected)")
        }
        #expect((try? FileManager.default.contentsOfDirectory(atPath: spool.path + "/status"))?.isEmpty ?? true)

        // A manifest: the bad lines, each by number, with export's words for the same options.
        let manifest = """
            {"asset": "\(source)", "preset": "LowQuality", "outputDir": "\(outputs.path)"}
            {"asset": "\(source)", "preset": "1280x720", "type": "m4a", "outputDir": "\(outputs.path)"}
            {"asset": "\(source)", "preset": "LowQuality", "timeRange": "7-9", "outputDir": "\(outputs.path)"}
            """
        let batch = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: ["REEL_SPOOL": spool.path],
            input: Data(manifest.utf8))
        #expect(batch.status == 65, "\(batch.stderr)")
        let refused = Self.objects(batch.stdout)
        #expect(refused.map { $0["line"] as? Int } == [2, 3], "\(batch.stdout)")
        let m4a = try await Self.exportError([source, "--preset", "1280x720", "--type", "m4a"])
        let late = try await Self.exportError([source, "--preset", "LowQuality", "--time-range", "7-9"])
        #expect(Self.same(refused.first?["error"] as? [String: Any], m4a), "\(refused)")
        #expect(Self.same(refused.last?["error"] as? [String: Any], late), "\(refused)")
        #expect(batch.stderr.hasPrefix("reel: error: manifest rejected, nothing was queued: line 2: "))

        // An argument error is JSON too, for submit and for export.
        let bad = try await ReelBinary.run(
            ["submit", source, "--preset", "LowQuality", "--time-range", "soon", "--json"],
            environment: ["REEL_SPOOL": spool.path])
        #expect(bad.status == 64)
        let error = try #require(Self.objects(bad.stdout).first?["error"] as? [String: Any], "\(bad.stdout)")
        #expect(error["code"] as? String == "invalid-argument" && error["retryable"] as? Bool == false)
        #expect((error["message"] as? String)?.contains("cannot read the time range 'soon'") == true)
        let exportBad = try await ReelBinary.run(["export", source, "--preset", "LowQuality", "--json", "--bogus"])
        #expect(exportBad.status == 64)
        let event = try #require(Self.objects(exportBad.stdout).first, "\(exportBad.stdout)")
        #expect(event["event"] as? String == "failed")
        #expect(((event["error"] as? [String: Any])?["message"] as? String)?.contains("--bogus") == true)
    }

    /// A video preset refuses an asset without video unless audio alone is allowed; the audio-only
    /// result carries `null` for the picture's keys; progress lines always carry `etaSeconds`.
    @Test func audioOnlyAssetsNeedConsentAndResultsCarryEveryKey() async throws {
        let folder = Fixtures.scratchFolder("answers-audio")
        let source = try await Fixtures.url(Fixtures.audioOnly).path
        let output = folder.appendingPathComponent("song.mp4")
        let refused = try await ReelBinary.run(["export", source, "--preset", "1280x720", "-o", output.path, "--json"])
        #expect(refused.status == 65, "\(refused.stderr)")
        let error = try #require(Self.objects(refused.stdout).last?["error"] as? [String: Any])
        #expect(error["code"] as? String == "no-video" && error["retryable"] as? Bool == false, "\(error)")
        #expect(refused.stderr.contains("--allow-audio-only"))
        #expect(!FileManager.default.fileExists(atPath: output.path))

        let allowed = try await ReelBinary.run([
            "export", source, "--preset", "1280x720", "-o", output.path, "--json", "--allow-audio-only",
        ])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let lines = Self.objects(allowed.stdout)
        let progress = lines.filter { $0["event"] as? String == "progress" }
        #expect(!progress.isEmpty && progress.allSatisfy { $0.keys.contains("etaSeconds") }, "\(allowed.stdout)")
        let result = try #require(lines.last?["result"] as? [String: Any])
        for key in ["width", "height", "videoCodec"] { #expect(result[key] is NSNull, "\(key): \(result)") }
        #expect(result["audioCodec"] as? String == "aac")
        let streams = try await ProbedFile.probe(output).streams
        #expect(streams.map(\.codec_type) == ["audio"])

        // The same refusal at submit, with the same code.
        let spool = Fixtures.scratchFolder("answers-audio-spool")
        let submitted = try await ReelBinary.run(
            ["submit", source, "--preset", "1280x720", "--output-dir", folder.path, "--json"],
            environment: ["REEL_SPOOL": spool.path])
        #expect(submitted.status == 65)
        #expect(Self.same(Self.objects(submitted.stdout).first?["error"] as? [String: Any], error))
    }

    /// A range ending past the asset is clamped to it, as AVFoundation does, and the result says so.
    @Test func aRangePastTheEndIsClampedAndReported() async throws {
        let folder = Fixtures.scratchFolder("answers-range")
        let source = try await Fixtures.url(Fixtures.landscape)
        let output = folder.appendingPathComponent("tail.mp4")
        let result = try await ReelBinary.run([
            "export", source.path, "--preset", "LowQuality", "--time-range", "0.5-30", "-o", output.path, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let facts = try #require(Self.objects(result.stdout).last?["result"] as? [String: Any])
        let requested = try #require(facts["requestedTimeRange"] as? [String: Any], "\(facts)")
        let actual = try #require(facts["timeRange"] as? [String: Any], "\(facts)")
        #expect(requested["start"] as? Double == 0.5 && requested["end"] as? Double == 30)
        let sourceSeconds = try #require(Double(try await ProbedFile.probe(source).format.duration ?? ""))
        #expect(actual["start"] as? Double == 0.5)
        #expect(abs((actual["end"] as? Double ?? 0) - sourceSeconds) < 0.05, "\(actual) vs \(sourceSeconds)")
        let seconds = try #require(Double(try await ProbedFile.probe(output).format.duration ?? ""))
        #expect(abs(seconds - (sourceSeconds - 0.5)) < 0.1, "the file lasts \(seconds) s")
        // Without a range, both are null (present).
        let whole = try await ReelBinary.run([
            "export", source.path, "--preset", "LowQuality", "-o", folder.appendingPathComponent("all.mp4").path,
            "--json",
        ])
        let all = try #require(Self.objects(whole.stdout).last?["result"] as? [String: Any])
        #expect(all["timeRange"] is NSNull && all["requestedTimeRange"] is NSNull, "\(all)")
    }

    /// A failure while writing names the file the user named, never the hidden temporary one, and no
    /// progress line says `failed` before the failed event.
    @Test func outputErrorsNameTheUsersFile() async throws {
        let folder = Fixtures.scratchFolder("answers-name")
        let source = try await Fixtures.url(Fixtures.landscape).path
        // 240 characters: the name fits, the temporary name beside it (longer) does not.
        let name = String(repeating: "n", count: 236) + ".mp4"
        let result = try await ReelBinary.run([
            "export", source, "--preset", "LowQuality", "-o", folder.appendingPathComponent(name).path, "--json",
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains(name) && result.stderr.contains("too long"), "\(result.stderr)")
        #expect(!result.stderr.contains(".partial") && !result.stderr.contains(".reel-"), "\(result.stderr)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true)

        // Verification fails after the encode (debug builds damage the file on request).
        let damaged = try await ReelBinary.run(
            [
                "export", source, "--preset", "LowQuality", "-o", folder.appendingPathComponent("cut.mp4").path,
                "--json", "--force-transcode",
            ], environment: ["REEL_TEST_OUTPUT_FAULT": "truncate"])
        let events = Self.objects(damaged.stdout)
        #expect(events.last?["event"] as? String == "failed", "\(damaged.stdout)")
        #expect(events.dropLast().allSatisfy { $0["status"] as? String != "failed" }, "\(damaged.stdout)")
        let message = ((events.last?["error"] as? [String: Any])?["message"] as? String) ?? ""
        #expect(!message.contains(".partial"), "\(message)")
    }

    /// `-dash.mp4` is a file, not the flags -d -a -s -h: an error saying how to name it, never the help.
    @Test func aDashNamedFileIsAnErrorThatSaysHowToNameIt() async throws {
        let folder = Fixtures.scratchFolder("answers-dash")
        try FileManager.default.copyItem(
            at: try await Fixtures.url(Fixtures.landscape), to: folder.appendingPathComponent("-dash.mp4"))
        func reel(_ arguments: String) async throws -> ToolResult {
            try await Tools.run(
                "/bin/bash", ["-c", "cd \"$1\" && \"$2\" \(arguments)", "reel", folder.path, ReelBinary.path])
        }
        for command in ["export -dash.mp4 --preset LowQuality -o out.mp4", "probe -dash.mp4", "submit -dash.mp4"] {
            let result = try await reel(command)
            #expect(result.status == 64, "\(command): \(result.stdout) \(result.stderr)")
            #expect(result.stdout.isEmpty, "\(command) printed: \(result.stdout)")
            #expect(
                result.stderr.contains("'-dash.mp4'") && result.stderr.contains("./-dash.mp4")
                    && result.stderr.contains("--"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
        // Written either way it suggests, it works.
        let dotted = try await reel("export ./-dash.mp4 --preset LowQuality -o dotted.mp4")
        #expect(dotted.status == 0, "\(dotted.stderr)")
        let after = try await reel("export --preset LowQuality -o after.mp4 -- -dash.mp4")
        #expect(after.status == 0, "\(after.stderr)")
        #expect(try await ProbedFile.probe(folder.appendingPathComponent("after.mp4")).streams.count == 2)
        // -h itself still asks for the help.
        #expect(try await reel("export -h").status == 0)
    }

    @Test func aNegativePriorityNeedsNoEqualsSign() async throws {
        let spool = Fixtures.scratchFolder("answers-priority")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let result = try await ReelBinary.run(
            ["submit", source, "--preset", "LowQuality", "--priority", "-3", "--output-dir", spool.path, "--json"],
            environment: ["REEL_SPOOL": spool.path])
        #expect(result.status == 0, "\(result.stderr)")
        let id = try #require(Self.objects(result.stdout).first?["id"] as? String)
        let status = try #require(
            FileManager.default.contents(atPath: spool.appendingPathComponent("status/\(id).json").path).flatMap {
                try JSONSerialization.jsonObject(with: $0) as? [String: Any]
            })
        #expect((status["spec"] as? [String: Any])?["priority"] as? Int == -3, "\(status)")
    }

    @Test func presetsShowAliasesAndCommandsOnlyTheirOptions() async throws {
        let presets = try await ReelBinary.run(["presets"])
        let lines = presets.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("1280x720 (720p)") }, "\(presets.stdout)")
        #expect(lines.contains { $0.hasPrefix("AppleM4A (m4a, audio)") }, "\(presets.stdout)")
        for command in ["status", "list", "wait", "cancel", "retry", "prune", "probe"] {
            let help = try await ReelBinary.run(["help", command])
            #expect(help.status == 0 && help.stdout.contains("--log-level"), "\(command)")
            #expect(!help.stdout.contains("--presets-dir"), "reel \(command) lists --presets-dir")
        }
        for command in ["export", "submit", "work", "presets"] {
            #expect(try await ReelBinary.run(["help", command]).stdout.contains("--presets-dir"), "\(command)")
        }
        // The database's commands take the database, not a spool or a status folder.
        for command in [["db", "migrate"], ["db", "version"]] {
            let help = try await ReelBinary.run(["help"] + command).stdout
            #expect(help.contains("--store") && !help.contains("--spool") && !help.contains("--status-dir"), "\(help)")
        }
    }
}
