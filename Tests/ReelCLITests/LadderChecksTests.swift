import Foundation
import TestSupport
import Testing

/// What a ladder must get right beyond its layout: the read-back before publishing, the audio's
/// start against the video's, the master playlist's VIDEO-RANGE, and ladder presets. Checked with
/// ffprobe and ffmpeg's decoders and filters, never with Reel's own reader.
@Suite("HLS ladder checks", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LadderChecksTests {
    /// 640x360 at 30 fps, 5 s; stereo PCM silent until exactly 1.000 s, then a 1 kHz tone: the
    /// source's onset is known to the sample.
    static let onsetSource = Fixtures.Recipe(
        "ladder-onset.mov",
        [
            "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=5", "-f", "lavfi", "-i",
            "aevalsrc=if(gte(t\\,1)\\,0.5*sin(2*PI*1000*t)\\,0)|if(gte(t\\,1)\\,0.5*sin(2*PI*1000*t)\\,0):s=48000:d=5",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le",
        ])

    /// A rendition's init segment and media segments, in playlist order, as one byte string.
    static func concatenated(_ playlist: URL) throws -> Data {
        let text = try String(contentsOf: playlist, encoding: .utf8)
        let folder = playlist.deletingLastPathComponent()
        var data = Data()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MAP:URI=\"") {
                let name = line.dropFirst("#EXT-X-MAP:URI=\"".count).prefix { $0 != "\"" }
                data += try Data(contentsOf: folder.appendingPathComponent(String(name)))
            } else if !line.hasPrefix("#"), !line.isEmpty {
                data += try Data(contentsOf: folder.appendingPathComponent(String(line)))
            }
        }
        return data
    }

    static func extinfTotal(_ playlist: URL) throws -> Double {
        try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst(8).split(separator: ",")[0]) }.reduce(0, +)
    }

    // MARK: - Read-back before publishing

    /// A segment damaged between the write and the publish (REEL_TEST_OUTPUT_FAULT, debug builds):
    /// cut short, or its `moof` zeroed with its size kept, so only reading the fragment back finds it.
    @Test(arguments: [("truncate", "bytes"), ("corrupt", "samples")])
    func aDamagedSegmentFailsTheLadderAndPublishesNothing(_ fault: String, _ finding: String) async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let parent = Fixtures.scratchFolder("ladder-fault")
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--segment-duration", "2",
                "-o", parent.appendingPathComponent("out").path,
            ], environment: ["REEL_TEST_OUTPUT_FAULT": fault])
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("ladder verification: v1/seg_00001.m4s")
                && lines[0].contains(finding), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }

    /// An undamaged ladder passes, and its completion says how long the read-back took. (`--ladder`
    /// alone implies `--type hls` and the default preset.)
    @Test func theReadBackIsTimedInTheCompletion() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let out = Fixtures.scratchFolder("ladder-verified").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--ladder", "320x180", "--manifests", "hls,dash", "-o", out.path, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let last = try #require(result.stdout.split(separator: "\n").last)
        let completion = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        let summary = try #require(completion["result"] as? [String: Any], "\(completion)")
        let seconds = try #require(summary["verificationSeconds"] as? Double, "\(summary)")
        let elapsed = try #require(summary["elapsedSeconds"] as? Double)
        #expect(seconds > 0 && seconds < elapsed)
    }

    /// `--type dash`: the ladder with its MPD alone (HLS playlists only when `--manifests hls,dash`
    /// asks), named `<asset>.<preset>.dash` by default as `submit` names it (with the job's id); a
    /// `--manifests` that leaves the MPD out contradicts the type.
    @Test func typeDashWritesTheMPDAloneNamedAsSubmitNamesIt() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let folder = Fixtures.scratchFolder("ladder-dash")
        // Run from `folder`, so the default name lands there.
        func reel(_ arguments: [String]) async throws -> ToolResult {
            try await Tools.run(
                "sh", ["-c", #"cd "$1" && shift && exec "$@""#, "sh", folder.path, ReelBinary.path] + arguments)
        }
        let result = try await reel(["export", source.path, "--type", "dash", "--ladder", "320x180", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let name = "ladder-source.1920x1080.dash"
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [name])
        let out = folder.appendingPathComponent(name)
        let files = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(files.contains("manifest.mpd") && !files.contains("master.m3u8"), "\(files)")
        let streams = try await Tools.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_type,width", "-of", "csv=p=0", out.path + "/manifest.mpd"])
        #expect(streams.stdout.contains("video,320") && streams.stdout.contains("audio"), "\(streams.stdout)")
        let completion = try #require(
            try JSONSerialization.jsonObject(with: Data((result.stdout.split(separator: "\n").last ?? "").utf8))
                as? [String: Any])
        #expect(completion["type"] as? String == "dash")
        let refused = try await reel([
            "export", source.path, "--type", "dash", "--ladder", "320x180", "--manifests", "hls",
        ])
        #expect(refused.status == 64 && refused.stderr.contains("leave it out"), "\(refused.stderr)")
        // submit names the folder the same way, with the job's id.
        let spool = Fixtures.scratchFolder("ladder-dash-spool")
        let submitted = try await ReelBinary.run(
            ["submit", source.path, "--type", "dash", "--ladder", "320x180", "--output-dir", folder.path, "--json"],
            environment: ["REEL_SPOOL": spool.path])
        #expect(submitted.status == 0, "\(submitted.stderr)")
        let job = try #require(try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any])
        let id = try #require(job["id"] as? String)
        #expect(
            (job["output"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent }
                == "ladder-source.1920x1080.\(id).dash")
    }

    // MARK: - Audio priming

    /// The AAC rendition's priming (1024 samples) is trimmed by an edit list: ffprobe puts its first
    /// packet 1024 samples before 0, where the video starts, and ffmpeg decodes the tone's onset at
    /// the source's 1.000 s (it was 21 ms late); the audio playlist lasts as long as the video's.
    @Test func theAudioStartsWithTheVideo() async throws {
        let source = try await Fixtures.url(Self.onsetSource)
        let out = Fixtures.scratchFolder("ladder-priming").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360", "--segment-duration", "2", "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let video = out.appendingPathComponent("v0/index.m3u8")
        let audio = out.appendingPathComponent("a/index.m3u8")
        func startTime(_ data: Data) async throws -> Double {
            let probe = try await Tools.run(
                "ffprobe", ["-v", "error", "-show_entries", "stream=start_time", "-of", "csv=p=0", "-"], input: data)
            #expect(probe.status == 0, "\(probe.stderr)")
            return try #require(Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(probe.stdout)")
        }
        let audioData = try Self.concatenated(audio)
        let videoStart = try await startTime(try Self.concatenated(video))
        let audioStart = try await startTime(audioData)
        #expect(abs(videoStart) < 0.001, "video starts at \(videoStart)")
        // The priming packet precedes the video by exactly AAC's 1024 samples at 48 kHz: the first
        // sample it leads into is presented with the first frame.
        #expect(abs(audioStart + 1024.0 / 48000 - videoStart) < 0.001, "audio \(audioStart), video \(videoStart)")

        // The onset as ffmpeg decodes it, at the source's moment.
        let detect = try await Tools.run(
            // -copyts: the CLI would otherwise move the first packet (the priming, before 0) to 0.
            "ffmpeg",
            ["-v", "info", "-nostats", "-copyts", "-i", "-", "-af", "silencedetect=n=-26dB:d=0.5", "-f", "null", "-"],
            input: audioData)
        #expect(detect.status == 0, "\(detect.stderr)")
        let end = try #require(
            detect.stderr.split(separator: "\n").first { $0.contains("silence_end:") }
                .flatMap { Double($0.components(separatedBy: "silence_end: ")[1].split(separator: " ")[0]) },
            "\(detect.stderr.suffix(600))")
        #expect(abs(end - 1.0) < 0.004, "the tone starts at \(end) s in the ladder, 1.000 s in the source")

        // Both playlists cover the same duration, the source's.
        let videoSeconds = try Self.extinfTotal(video)
        let audioSeconds = try Self.extinfTotal(audio)
        #expect(abs(audioSeconds - videoSeconds) < 0.001, "audio \(audioSeconds) s, video \(videoSeconds) s")
        #expect(abs(videoSeconds - 5) < 0.001, "\(videoSeconds)")
    }

    // MARK: - VIDEO-RANGE

    /// An HLG source is tone-mapped by the exports' tone mapper: every rung is BT.709 as ffprobe
    /// reads it, and the master playlist says VIDEO-RANGE=SDR on every variant.
    @Test func anHLGSourceMakesSDRRungsSaidToBeSDR() async throws {
        let source = try await Fixtures.url(Fixtures.hlg)
        let out = Fixtures.scratchFolder("ladder-hlg").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        #expect(variants.count == 2)
        #expect(variants.allSatisfy { $0.contains(",VIDEO-RANGE=SDR,") }, "\(master)")
        for rung in ["v0", "v1"] {
            let probe = try await Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-show_entries", "stream=color_transfer,color_primaries,color_space", "-of",
                    "default=nw=1", "-",
                ], input: try Self.concatenated(out.appendingPathComponent("\(rung)/index.m3u8")))
            #expect(probe.status == 0, "\(probe.stderr)")
            let tags = Set(probe.stdout.split(separator: "\n").map(String.init))
            #expect(
                tags == ["color_transfer=bt709", "color_primaries=bt709", "color_space=bt709"], "\(rung): \(tags)")
        }
    }

    // MARK: - Ladder presets

    /// `reel presets` lists the shipped ladder preset with its rungs (`--json`).
    @Test func thePresetsListShowsTheLadderPreset() async throws {
        let listed = try await ReelBinary.run(["presets"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").contains { $0.hasPrefix("HLSLadder1080 (hls1080p)") })
        let json = try await ReelBinary.run(["presets", "--json"])
        let presets = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        let ladder = try #require(presets.first { $0["name"] as? String == "HLSLadder1080" })
        #expect(ladder["kind"] as? String == "ladder")
        let spec = try #require(ladder["ladder"] as? [String: Any])
        #expect(spec["rungs"] as? [String] == ["1920x1080", "1280x720", "960x540", "640x480"])
        #expect(spec["segmentDuration"] as? Double == 6)
    }

    /// The ladder preset named as `--preset` or as `--ladder` makes the same ladder: the rungs of its
    /// presets' boxes fitted to the 16:9 source, those above it dropped, 6 s segments.
    @Test(arguments: [["--preset", "HLSLadder1080"], ["--ladder", "hls1080p"]])
    func aLadderPresetMakesItsLadder(_ options: [String]) async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let out = Fixtures.scratchFolder("ladder-preset").appendingPathComponent("out")
        let result = try await ReelBinary.run(["export", source.path] + options + ["-o", out.path + "/"])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let resolutions = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }.map {
            $0.components(separatedBy: "RESOLUTION=")[1].prefix { $0 != "," }
        }
        // 1920x1080, 1280x720 and 960x540 are above the 640x360 source.
        #expect(resolutions == ["640x360"], "\(master)")
        let playlist = try String(contentsOf: out.appendingPathComponent("v0/index.m3u8"), encoding: .utf8)
        let durations = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXTINF:") }.compactMap {
            Double($0.dropFirst(8).split(separator: ",")[0])
        }
        // 7 s in 6 s segments (at 29.97 fps: 6.006 and the rest).
        #expect(durations.count == 2 && abs(durations[0] - 6.006) < 0.001, "\(durations)")
    }

    /// A preset folder takes ladder presets too, naming its own rung presets; one naming a preset that
    /// is not an H.264 video preset fails in one line naming the file and field.
    @Test func aPresetFolderTakesLadderPresets() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let presets = Fixtures.scratchFolder("ladder-presets-dir")
        try Data(
            #"{"name": "Small", "summary": "H.264 in 320x180", "kind": "video", "video": {"codec": "h264", "box": [320, 180], "encoderPreset": "veryfast", "crf": 30}, "audio": {"codec": "aac", "bitrate": 64000, "maxChannels": 2}}"#
                .utf8
        ).write(to: presets.appendingPathComponent("Small.json"))
        try Data(
            #"{"name": "TwoRungs", "summary": "two rungs", "kind": "ladder", "ladder": {"rungs": ["Small", "640x480"], "segmentDuration": 2, "manifests": ["hls", "dash"]}}"#
                .utf8
        ).write(to: presets.appendingPathComponent("TwoRungs.json"))
        let out = Fixtures.scratchFolder("ladder-custom").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--presets-dir", presets.path, "--preset", "TwoRungs", "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(names == ["a", "manifest.mpd", "master.m3u8", "v0", "v1"], "\(names)")
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        #expect(master.contains("RESOLUTION=640x360") && master.contains("RESOLUTION=320x180"), "\(master)")
        let playlist = try String(contentsOf: out.appendingPathComponent("v1/index.m3u8"), encoding: .utf8)
        #expect(playlist.contains("#EXT-X-TARGETDURATION:2\n"), "\(playlist)")

        try Data(
            #"{"name": "Broken", "summary": "x", "kind": "ladder", "ladder": {"rungs": ["AppleM4A"]}}"#.utf8
        ).write(to: presets.appendingPathComponent("Broken.json"))
        let refused = try await ReelBinary.run(["presets", "--presets-dir", presets.path])
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("Broken.json: field 'ladder.rungs' names 'AppleM4A'"),
            "\(refused.stderr)")
    }
}
