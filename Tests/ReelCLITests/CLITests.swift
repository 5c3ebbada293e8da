import Foundation
import TestSupport
import Testing

@Suite("reel command line", .tags(.process, .media), .timeLimit(.minutes(6)))
struct CLITests {
    /// One line (and one JSON object) per preset file in `Presets/`.
    @Test func presetsListsEveryShippedPresetWithItsSummary() async throws {
        let shipped = try FileManager.default.contentsOfDirectory(
            atPath: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../../Presets").standardizedFileURL.path
        ).filter { $0.hasSuffix(".json") }.count
        #expect(shipped >= 18)
        let result = try await ReelBinary.run(["presets"])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == shipped)
        #expect(lines.contains { $0.hasPrefix("MediumQuality") && $0.contains("568x320") })
        let json = try await ReelBinary.run(["presets", "--json"])
        let decoded = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]]
        #expect(decoded?.count == shipped)
        #expect(
            decoded?.first { $0["name"] as? String == "1280x720" }.flatMap {
                ($0["video"] as? [String: Any])?["crf"] as? Double
            } == 21)
    }

    /// The version moves with CHANGELOG.md (its first numbered heading), with the commit beside it.
    @Test func theVersionIsTheChangelogs() async throws {
        let result = try await ReelBinary.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix(try Changelog.version()), "\(result.stdout)")
    }

    @Test func presetsDirectoryComesFromTheEnvironment() async throws {
        let folder = Fixtures.scratchFolder("env-presets")
        try
            #"{"name": "Broken", "summary": "x", "kind": "audio", "audio": {"codec": "mp3", "bitrate": 96000, "maxChannels": 2}}"#
            .write(to: folder.appendingPathComponent("Broken.json"), atomically: true, encoding: .utf8)
        let result = try await ReelBinary.run(["presets"], environment: ["REEL_PRESETS": folder.path])
        #expect(result.status != 0)
        #expect(
            result.stderr.hasPrefix("reel: error: ") && result.stderr.contains("Broken.json")
                && result.stderr.contains("audio.codec"))
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func probeReportsRotationAndMetadata() async throws {
        let rotated = try await Fixtures.url(Fixtures.rotated(90))
        let result = try await ReelBinary.run(["probe", rotated.path, "--json"])
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["displayWidth"] as? Int == 270 && json["displayHeight"] as? Int == 480)
        #expect(json["rotation"] as? Int == 270)
        let landscape = try await ReelBinary.run(["probe", try await Fixtures.url(Fixtures.landscape).path, "--json"])
        let facts = try #require(try JSONSerialization.jsonObject(with: Data(landscape.stdout.utf8)) as? [String: Any])
        #expect(facts["location"] as? String == "+48.8584+002.2945/")
        #expect(facts["make"] as? String == "Apple")
        #expect(facts["creationDate"] as? String == "2024-05-01T10:00:00Z")
        let text = try await ReelBinary.run(["probe", try await Fixtures.url(Fixtures.landscape).path])
        #expect(text.stdout.contains("640x360") && text.stdout.contains("h264"))
    }

    @Test func probeShowsTheHDRKindTheMetadataAndMirrors() async throws {
        let pq = try await ReelBinary.run(["probe", try await Fixtures.url(Fixtures.pq).path])
        #expect(pq.status == 0 && pq.stdout.contains("HDR10"), "\(pq.stdout)")
        #expect(
            pq.stdout.contains("MaxCLL 1000 cd/m², MaxFALL 400 cd/m² (SEI)") && pq.stdout.contains("WP(0.3127,0.3290)"))
        let dv = try await ReelBinary.run(["probe", try await Fixtures.url(Fixtures.dolbyVisionWithRPU).path, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(dv.stdout.utf8)) as? [String: Any])
        #expect(json["hdr"] as? String == "Dolby Vision 8.4 (HLG base layer)")
        let track = try #require((json["tracks"] as? [[String: Any]])?.first)
        #expect(track["dynamicRange"] as? String == "dolby-vision" && track["hasDolbyVisionRPU"] as? Bool == true)
        #expect((track["dolbyVision"] as? [String: Any])?["profile"] as? Int == 8)
        let mirrored = try await ReelBinary.run(["probe", try await Fixtures.url(Fixtures.mirrored(.vertical)).path])
        #expect(mirrored.stdout.contains("480x270, mirrored, rotated 180°"), "\(mirrored.stdout)")
    }

    /// `--json` answers in JSON on every path: a failure a command has no JSON of its own for is one
    /// object on stdout, `{"command", "error": {"code", "message", "retryable"}}`, beside the one
    /// `reel: error:` line on stderr.
    @Test(arguments: [
        (
            ["status", "--json", "--store", "postgres://reel@127.0.0.1:1/nothing?sslmode=disable"], "status",
            "store-unavailable", true, Int32(69)
        ),
        (
            [
                "submit", "--json", "--store", "postgres://reel@127.0.0.1:1/nothing?sslmode=disable", "ASSET",
                "--preset", "LowQuality", "-o", "OUT/x.mp4",
            ], "submit", "store-unavailable", true, 69
        ),
        (["status", "--json", "no-such-job", "--spool", "SPOOL"], "status", "unknown-job", false, 1),
        (
            ["thumbnail", "--json", "OUT/missing.mp4", "--at", "0", "-o", "OUT"], "thumbnail", "unreadable-input",
            false, 65
        ),
        (
            ["library", "show", "--json", "--library", "OUT/lib.sqlite", "no-such-asset"], "library show",
            "unknown-asset",
            false, 65
        ),
        (
            ["library", "changes", "--json", "--library", "OUT/lib.sqlite", "--since", "junk"], "library changes",
            "invalid-argument", false, 64
        ),
    ])
    func everyFailureAnswersInJSONWithJSON(
        _ arguments: [String], _ command: String, _ code: String, _ retryable: Bool, _ status: Int32
    ) async throws {
        let folder = Fixtures.scratchFolder("cli-json-failure")
        let asset = try await Fixtures.url(Fixtures.landscape).path
        let spool = folder.appendingPathComponent("spool").path
        if arguments.contains("SPOOL") {
            // A spool that exists, with one job: the store answers, the job asked for is not there.
            let made = try await ReelBinary.run([
                "submit", asset, "--preset", "LowQuality", "--spool", spool, "-o", folder.path + "/x.mp4",
            ])
            try #require(made.status == 0, "\(made.stderr)")
        }
        let result = try await ReelBinary.run(
            arguments.map {
                $0.replacingOccurrences(of: "OUT", with: folder.path).replacingOccurrences(of: "ASSET", with: asset)
                    .replacingOccurrences(of: "SPOOL", with: spool)
            })
        #expect(result.stderr.hasPrefix("reel: error: ") && result.stderr.split(separator: "\n").count == 1)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "one JSON object: \(result.stdout)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any], "\(result.stdout)"
        )
        let error = try #require(object["error"] as? [String: Any], "\(object)")
        #expect(error["code"] as? String == code && error["retryable"] as? Bool == retryable, "\(object)")
        #expect((error["message"] as? String).map { result.stderr.contains($0) } == true)
        if command != "submit" { #expect(object["command"] as? String == command) }
        #expect(result.status == status, "\(result.status) \(result.stderr)")
    }

    @Test func exportWithJSONPrintsProgressAndTheResult() async throws {
        let folder = Fixtures.scratchFolder("cli-export")
        let output = folder.appendingPathComponent("clip.mov")
        let result = try await ReelBinary.run([
            "export", try await Fixtures.url(Fixtures.landscape).path, "--preset", "AVAssetExportPresetMediumQuality",
            "-o", output.path, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.contains { $0["event"] as? String == "progress" })
        let last = try #require(lines.last)
        #expect(last["event"] as? String == "completed" && last["type"] as? String == "mov")
        #expect(((last["result"] as? [String: Any])?["width"] as? Int) == 568)
        #expect(try await ProbedFile.probe(output).format.tags?["major_brand"] == "qt  ")
    }

    @Test(arguments: [
        (["export", "/nonexistent/clip.mp4", "--preset", "720p"], "clip.mp4"),
        (["export", "LANDSCAPE", "--preset", "nope"], "unknown preset"),
        (["export", "LANDSCAPE", "--preset", "1280x720", "--type", "m4a"], "m4a"),
        (["export", "LANDSCAPE", "--preset", "1280x720", "--time-range", "5-9"], "after the end"),
    ])
    func errorsAreOneLineAndLeaveNothing(_ arguments: [String], _ words: String) async throws {
        let folder = Fixtures.scratchFolder("cli-error")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let result = try await ReelBinary.run(
            arguments.map { $0 == "LANDSCAPE" ? source : $0 } + ["-o", folder.appendingPathComponent("out.mp4").path])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("reel: error: ") && result.stderr.contains(words), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true)
    }

    /// x264 writes its settings into the stream; mediainfo reads them back.
    @Test func threadsOptionReachesTheEncoder() async throws {
        let folder = Fixtures.scratchFolder("cli-threads")
        let source = try await Fixtures.url(Fixtures.landscape).path
        let single = folder.appendingPathComponent("single.mp4")
        let result = try await ReelBinary.run([
            "export", source, "--preset", "LowQuality", "-o", single.path, "--force-transcode", "--threads", "1",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await MediaInfoTool.x264Threads(single) == 1)
        if ProcessInfo.processInfo.activeProcessorCount > 1 {
            let automatic = folder.appendingPathComponent("automatic.mp4")
            let result = try await ReelBinary.run([
                "export", source, "--preset", "LowQuality", "-o", automatic.path, "--force-transcode",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try await MediaInfoTool.x264Threads(automatic).map { $0 > 1 } == true)
        }
        let refused = try await ReelBinary.run(["export", source, "--preset", "LowQuality", "--threads", "-2"])
        #expect(refused.status == 64 && refused.stderr.contains("--threads"), "\(refused.stderr)")
    }

    /// Ctrl-C, and SIGHUP (the terminal or SSH session closed) alike: cancelled, exit 130, nothing left.
    @Test(arguments: [SIGINT, SIGHUP])
    func interruptCancelsAndLeavesNothing(_ signal: Int32) async throws {
        let folder = Fixtures.scratchFolder("cli-interrupt")
        let export = try ReelBinary.start([
            "export", try await Fixtures.url(Fixtures.long).path, "--preset", "HighestQuality", "-o",
            folder.appendingPathComponent("out.mp4").path, "--json", "--force-transcode",
        ])
        // Wait until frames are being encoded, so the export is really under way.
        func events() -> [[String: Any]] {
            export.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let encoding = await eventually {
            events().contains { $0["event"] as? String == "progress" && ($0["frames"] as? Int ?? 0) > 0 } ? true : nil
        }
        #expect(encoding != nil, "no progress: \(export.output.suffix(600))")
        export.signal(signal)
        let ended = try await export.exit()
        #expect(ended.reason == .exit && ended.status == 130, "output: \(export.output.suffix(600))")
        let last = try #require(events().last)
        #expect(last["event"] as? String == "failed")
        #expect((last["error"] as? [String: Any])?["code"] as? String == "cancelled", "\(last)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true)
    }

    /// A terminal really closed (its pseudo-terminal hung up, not a signal from a test): the
    /// foreground export is cancelled as by Ctrl-C (exit 130) and leaves no hidden `.partial`,
    /// although its progress bar can no longer be written.
    @Test func aClosedTerminalCancelsTheExportAndLeavesNothing() async throws {
        let folder = Fixtures.scratchFolder("cli-hang-up")
        let terminal = try Terminal(
            ReelBinary.path,
            [
                "export", try await Fixtures.url(Fixtures.long).path, "--preset", "HighestQuality", "-o",
                folder.appendingPathComponent("out.mp4").path, "--force-transcode",
            ])
        // The hidden temporary file is there once the export is under way.
        let writing = await eventually(within: .seconds(120)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).isEmpty ? nil : true
        }
        #expect(writing != nil, "no export began: \(terminal.screen.suffix(400))")
        try terminal.hangUp()
        let ended = try await terminal.ended()
        #expect(ended == "exited 130", "\(ended); the terminal showed: \(terminal.screen.suffix(400))")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.isEmpty == true)
    }

    /// `--estimate` says how it found the size; Ctrl-C during its sample encodes cancels them and
    /// removes their folder (made under TMPDIR).
    @Test func theEstimateNamesItsMethodAndACancelLeavesNoSamples() async throws {
        let source = try await Fixtures.url(Fixtures.long).path
        let quick = try await ReelBinary.run([
            "export", source, "--preset", "LowQuality", "--estimate", "--model-estimate",
        ])
        #expect(quick.status == 0 && quick.stdout.contains("Reel's model of the encoder, no frame read"), "\(quick)")
        let temporary = Fixtures.scratchFolder("estimate-tmp")
        let measured = try await ReelBinary.run(
            ["export", source, "--preset", "LowQuality", "--estimate", "--json"],
            environment: ["TMPDIR": temporary.path])
        let plan = try #require(try JSONSerialization.jsonObject(with: Data(measured.stdout.utf8)) as? [String: Any])
        #expect(plan["estimateMethod"] as? String == "samples", "\(measured.stdout)")
        #expect((plan["estimateSamples"] as? [String: Any])?["count"] as? Int == 4)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary.path))?.isEmpty == true)
        let refused = try await ReelBinary.run(["export", source, "--preset", "LowQuality", "--model-estimate"])
        #expect(refused.status == 64 && refused.stderr.contains("--model-estimate goes with --estimate"))

        let running = try ReelBinary.start(
            ["export", source, "--preset", "HighestQuality", "--estimate", "--force-transcode"],
            environment: ["TMPDIR": temporary.path])
        let sampling = await eventually(within: .seconds(120)) { () -> Bool? in
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
            let files = folders.flatMap {
                (try? FileManager.default.contentsOfDirectory(atPath: temporary.path + "/" + $0)) ?? []
            }
            return files.isEmpty ? nil : true
        }
        #expect(sampling != nil, "no sample encode started: \(running.output.suffix(400))")
        running.signal(SIGINT)
        let ended = try await running.exit()
        #expect(ended.reason == .exit && ended.status == 130, "\(running.output.suffix(400))")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: temporary.path))?.isEmpty == true)
    }

    @Test func aClosedStdoutDoesNotLeaveATemporaryFile() async throws {
        // As `reel export --json | head -1` does: the reader goes away after one line.
        let folder = Fixtures.scratchFolder("cli-pipe")
        let result = try await Tools.run(
            "/bin/bash",
            [
                "-c", #""$@" 2>/dev/null | head -1 >/dev/null; echo "${PIPESTATUS[0]}""#, "pipe", ReelBinary.path,
                "export", try await Fixtures.url(Fixtures.landscape).path, "--preset", "MediumQuality", "-o",
                folder.appendingPathComponent("out.mp4").path, "--json", "--force-transcode",
            ],
            timeLimit: .seconds(300))
        // Reel ends by itself (an exit status, not SIGPIPE's 141) and leaves only the published file.
        let status = Int32(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(status != nil && status! < 128, "reel's status: \(result.stdout) \(result.stderr)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["out.mp4"])
    }
}
