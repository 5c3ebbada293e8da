import Foundation
import TestSupport
import Testing

/// `reel export --type hls --ladder …`: a folder of CMAF segments and HLS playlists, checked with
/// ffprobe (the playlists, every segment's packets) and with sizes and durations measured here, never
/// with Reel's own reader.
@Suite("HLS ladders", .tags(.process, .media, .browser), .timeLimit(.minutes(10)))
struct LadderTests {
    /// One `#EXT-X-STREAM-INF` of the master playlist: its attributes and URI.
    struct Variant {
        var attributes: [String: String]
        var uri: String
        func number(_ key: String) -> Double? { attributes[key].flatMap(Double.init) }
    }

    /// The attributes of an HLS tag line (`KEY=value,KEY="quoted, value"`).
    static func attributes(_ line: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var key = ""
        var value = ""
        var inKey = true
        var quoted = false
        for character in line {
            if inKey {
                if character == "=" { inKey = false } else { key.append(character) }
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                result[key] = value
                key = ""
                value = ""
                inKey = true
            } else {
                value.append(character)
            }
        }
        if !key.isEmpty { result[key] = value }
        return result
    }

    static func variants(_ master: String) -> [Variant] {
        let lines = master.split(separator: "\n")
        var found: [Variant] = []
        for (index, line) in lines.enumerated() where line.hasPrefix("#EXT-X-STREAM-INF:") && index + 1 < lines.count {
            found.append(
                Variant(
                    attributes: attributes(line.dropFirst("#EXT-X-STREAM-INF:".count)), uri: String(lines[index + 1])))
        }
        return found
    }

    /// A rung as a player appends it: its init segment, then its media segments in the order of its
    /// playlist (`playlist`); and where each media segment ends in it.
    static func wholeRung(_ playlist: URL) throws -> (data: Data, ends: [Int]) {
        let lines = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n")
        let files = ["init.mp4"] + lines.filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        var whole = Data()
        var ends: [Int] = []
        for file in files {
            whole += try Data(contentsOf: playlist.deletingLastPathComponent().appendingPathComponent(file))
            if file != "init.mp4" { ends.append(whole.count) }
        }
        return (whole, ends)
    }

    /// A segment as ffprobe reads it (the init segment and the media segment together, as a player
    /// appends them): its first packet's time and key flag, how long it plays, its file's size.
    struct ProbedSegment {
        var firstPts: Double
        var startsWithKeyframe: Bool
        var seconds: Double
        var bytes: Int
        var bitrate: Double { Double(bytes) * 8 / seconds }
    }

    /// Every segment of the media playlist at `playlist`, in order, read by ffprobe.
    static func segments(of playlist: URL) async throws -> (segments: [ProbedSegment], extinf: [Double], target: Int) {
        let text = try String(contentsOf: playlist, encoding: .utf8)
        let folder = playlist.deletingLastPathComponent()
        let lines = text.split(separator: "\n")
        let target = try #require(
            lines.first { $0.hasPrefix("#EXT-X-TARGETDURATION:") }.flatMap { Int($0.split(separator: ":")[1]) })
        let map = try #require(
            lines.first { $0.hasPrefix("#EXT-X-MAP:") }.flatMap { attributes($0.dropFirst(11))["URI"] })
        let header = try Data(contentsOf: folder.appendingPathComponent(map))
        var extinf: [Double] = []
        var result: [ProbedSegment] = []
        var starts: [Double] = []
        for line in lines {
            if line.hasPrefix("#EXTINF:") {
                extinf.append(try #require(Double(line.dropFirst(8).split(separator: ",")[0])))
                continue
            }
            guard !line.hasPrefix("#"), !line.isEmpty else { continue }
            let segment = try Data(contentsOf: folder.appendingPathComponent(String(line)))
            let probe = try await Tools.run(
                "ffprobe",
                ["-v", "error", "-show_entries", "packet=pts_time,duration_time,flags", "-of", "csv=p=0", "-"],
                input: header + segment)
            #expect(probe.status == 0, "\(line): \(probe.stderr)")
            let packets = probe.stdout.split(separator: "\n").map {
                $0.split(separator: ",", omittingEmptySubsequences: false)
            }
            let first = try #require(packets.first, "\(line) has no packet")
            // fMP4 fragments give ffprobe no per-packet durations (N/A): a segment lasts from its
            // first presented frame to the next segment's, the last one frame past its latest.
            let times = packets.compactMap { Double($0[0]) }.sorted()
            let steps = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
            result.append(
                ProbedSegment(
                    firstPts: try #require(Double(first[0])), startsWithKeyframe: first[2].contains("K"),
                    seconds: (try #require(times.last)) + (steps.isEmpty ? 0 : steps[steps.count / 2])
                        - (try #require(times.first)), bytes: segment.count))
            starts.append(try #require(times.first))
        }
        // Up to the next segment's first frame.
        for index in result.indices.dropLast() { result[index].seconds = starts[index + 1] - starts[index] }
        return (result, extinf, target)
    }

    @Test func aLadderIsOneFolderOfAlignedRungsWithMeasuredBandwidth() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let parent = Fixtures.scratchFolder("ladder")
        let folder = parent.appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "1280x720,640x360,480x270,320x180",
            "--segment-duration", "2", "-o", folder.path + "/",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        // Published by rename: nothing but the folder beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["out"])
        let masterURL = folder.appendingPathComponent("master.m3u8")
        let master = try String(contentsOf: masterURL, encoding: .utf8)

        // ffprobe opens the master playlist: one program per variant, the rung above the source dropped.
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-show_entries", "program=program_id:stream=codec_type,width,height", "-of", "json",
                masterURL.path,
            ])
        #expect(probe.status == 0, "\(probe.stderr)")
        let programs = try #require(
            (try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])?["programs"]
                as? [[String: Any]])
        let widths = programs.compactMap { program in
            (program["streams"] as? [[String: Any]])?.first { $0["codec_type"] as? String == "video" }?["width"] as? Int
        }
        #expect(widths.sorted() == [320, 480, 640], "\(probe.stdout)")

        let variants = Self.variants(master)
        #expect(variants.count == 3)
        let audioLine = try #require(master.split(separator: "\n").first { $0.hasPrefix("#EXT-X-MEDIA:TYPE=AUDIO") })
        let audioURI = try #require(Self.attributes(audioLine.dropFirst("#EXT-X-MEDIA:".count))["URI"])
        let audio = try await Self.segments(of: folder.appendingPathComponent(audioURI))
        let audioPeak = try #require(audio.segments.map(\.bitrate).max())
        let audioBits = Double(audio.segments.map(\.bytes).reduce(0, +)) * 8
        let audioSeconds = audio.segments.map(\.seconds).reduce(0, +)

        var starts: [[Double]] = []
        for variant in variants {
            let playlist = folder.appendingPathComponent(variant.uri)
            let (segments, extinf, target) = try await Self.segments(of: playlist)
            #expect(segments.count == 4 && extinf.count == 4, "\(variant.uri): 7 s in 2 s segments")
            #expect(target == audio.target, "one EXT-X-TARGETDURATION in every playlist")
            for (segment, duration) in zip(segments, extinf) {
                #expect(segment.startsWithKeyframe, "\(variant.uri): a segment starts without a keyframe")
                #expect(Int((duration + 0.5).rounded(.down)) <= target)
                #expect(
                    abs(segment.seconds - duration) < 0.001,
                    "\(variant.uri): EXTINF \(duration), ffprobe \(segment.seconds)")
            }
            starts.append(segments.map(\.firstPts))

            // BANDWIDTH covers every segment's bit rate with the audio's peak; AVERAGE-BANDWIDTH is the mean.
            let bandwidth = try #require(variant.number("BANDWIDTH"))
            let average = try #require(variant.number("AVERAGE-BANDWIDTH"))
            let peak = try #require(segments.map(\.bitrate).max())
            #expect(bandwidth >= peak + audioPeak, "\(variant.uri): BANDWIDTH \(bandwidth) < \(peak) + \(audioPeak)")
            let mean =
                Double(segments.map(\.bytes).reduce(0, +)) * 8 / segments.map(\.seconds).reduce(0, +)
                + audioBits / audioSeconds
            #expect(abs(average - mean) / mean < 0.01, "\(variant.uri): AVERAGE-BANDWIDTH \(average), measured \(mean)")
            #expect(average < bandwidth)

            // CODECS, RESOLUTION and FRAME-RATE as ffprobe reads the rung.
            let stream = try await Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v", "-show_entries",
                    "stream=profile,level,width,height,r_frame_rate",
                    "-of", "default=nw=1", playlist.path,
                ])
            let fields = Dictionary(
                stream.stdout.split(separator: "\n").map { line -> (String, String) in
                    let parts = line.split(separator: "=", maxSplits: 1)
                    return (String(parts[0]), parts.count > 1 ? String(parts[1]) : "")
                }, uniquingKeysWith: { first, _ in first })
            let codecs = try #require(variant.attributes["CODECS"])
            let avc = try #require(codecs.split(separator: ",").first { $0.hasPrefix("avc1.") })
            let hex = avc.dropFirst(5)
            let profiles = ["High": "64", "Main": "4d", "Constrained Baseline": "42", "Baseline": "42"]
            #expect(hex.prefix(2).lowercased() == profiles[fields["profile"] ?? ""], "\(codecs) vs \(fields)")
            let level = try #require(Int(fields["level"] ?? ""))
            #expect(hex.suffix(2).lowercased() == String(format: "%02x", level), "\(codecs) vs level \(level)")
            #expect(codecs.contains("mp4a.40.2"))
            #expect(variant.attributes["RESOLUTION"] == "\(fields["width"] ?? "")x\(fields["height"] ?? "")")
            let rate = try #require(fields["r_frame_rate"]?.split(separator: "/").compactMap { Double($0) })
            #expect(variant.attributes["FRAME-RATE"] == String(format: "%.3f", rate[0] / rate[1]))
        }
        // Every rung's segments start at the same times: the first frame at or after each 2 s (29.97 fps).
        #expect(
            starts.allSatisfy { $0.count == starts[0].count && zip($0, starts[0]).allSatisfy { abs($0 - $1) < 1e-6 } },
            "\(starts)")
        #expect(zip(starts[0], [0, 2.002, 4.004, 6.006]).allSatisfy { abs($0 - $1) < 0.001 }, "\(starts[0])")
    }

    /// Every sample lasts as long as its frame is shown, read by ffprobe from each rung played
    /// whole (the init segment and every media segment in playlist order, as a player appends them):
    /// a sample's duration in the `trun` is the gap to the next sample's decode time, the last one's
    /// the stream's end. The last frame shown ends where the frames do (Chromium's MSE ends the
    /// buffered range at its pts plus its sample's duration: with B-frames it was once one tick), and
    /// each segment's samples add up to its EXTINF. At 29.97 and 30 fps.
    @Test(arguments: [Fixtures.ladderSource, LadderPlaybackTests.thirtyFrames])
    func everySampleLastsAsLongAsItsFrameIsShown(_ recipe: Fixtures.Recipe) async throws {
        let source = try await Fixtures.url(recipe)
        let folder = Fixtures.scratchFolder("ladder-samples").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--segment-duration", "2",
            "-o", folder.path + "/",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let video = try #require(try await ProbedFile.probe(source, countFrames: true).video)
        let frames = try #require(video.frames)
        let rate = try #require(video.avg_frame_rate?.split(separator: "/").compactMap { Double($0) })
        let framesEnd = Double(frames) * rate[1] / rate[0]
        for rung in ["v0", "v1"] {
            let playlist = folder.appendingPathComponent("\(rung)/index.m3u8")
            let lines = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n")
            let extinf = try lines.filter { $0.hasPrefix("#EXTINF:") }.map {
                try #require(Double($0.dropFirst(8).split(separator: ",")[0]))
            }
            // The whole rung, and where each media segment ends in it.
            let (whole, ends) = try Self.wholeRung(playlist)
            let probe = try await Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-show_entries", "packet=pts_time,dts_time,pos:stream=duration", "-of", "json",
                    "-",
                ], input: whole)
            try #require(probe.status == 0, "\(rung): \(probe.stderr)")
            let json = try #require(try JSONSerialization.jsonObject(with: Data(probe.stdout.utf8)) as? [String: Any])
            let packets = try #require(json["packets"] as? [[String: Any]]).map { packet in
                (
                    pts: Double(packet["pts_time"] as? String ?? "") ?? .nan,
                    dts: Double(packet["dts_time"] as? String ?? "") ?? .nan,
                    pos: Int(packet["pos"] as? String ?? "") ?? -1
                )
            }
            let duration = (json["streams"] as? [[String: Any]])?.first?["duration"] as? String
            let streamEnd = try #require(duration.flatMap { Double($0) })
            try #require(packets.count == frames, "\(rung): \(packets.count) samples, \(frames) frames")
            // Decode times from the edit list's start: the stream's duration is where the last sample ends.
            let origin = try #require(packets.first).dts
            let durations = packets.indices.map { index in
                (index + 1 < packets.count ? packets[index + 1].dts - origin : streamEnd)
                    - (packets[index].dts - origin)
            }
            let last = try #require(packets.indices.max { packets[$0].pts < packets[$1].pts })
            #expect(
                abs(packets[last].pts + durations[last] - framesEnd) < 0.001,
                "\(rung): the last frame shown (\(packets[last].pts) s) lasts \(durations[last]) s, not to \(framesEnd) s"
            )
            #expect(
                zip(packets.map(\.pts).sorted().dropFirst(), packets.map(\.pts).sorted()).allSatisfy {
                    abs($0 - $1 - rate[1] / rate[0]) < 0.001
                }, "\(rung): frames a frame apart")
            #expect(durations.allSatisfy { abs($0 - rate[1] / rate[0]) < 0.001 }, "\(rung): \(durations)")
            let perSegment = ends.indices.map { segment in
                packets.indices.filter {
                    packets[$0].pos < ends[segment] && (segment == 0 || packets[$0].pos >= ends[segment - 1])
                }.map { durations[$0] }.reduce(0, +)
            }
            #expect(perSegment.count == extinf.count)
            #expect(
                zip(perSegment, extinf).allSatisfy { abs($0 - $1) < 0.001 },
                "\(rung): samples \(perSegment), EXTINF \(extinf)")
        }
    }

    /// `--manifests hls,dash`: a DASH manifest over the same segment files, which FFmpeg's own DASH
    /// reader opens and decodes every frame of each rung through (its SegmentTimeline addresses them).
    @Test func aDashManifestAddressesTheSameSegments() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let folder = Fixtures.scratchFolder("ladder-dash").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "--segment-duration", "2",
            "--manifests", "hls,dash", "-o", folder.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == ["a", "manifest.mpd", "master.m3u8", "v0", "v1"], "\(names)")
        let sourceFrames = try #require(try await ProbedFile.probe(source, countFrames: true).video?.frames)
        // The absolute path: FFmpeg 5.1's DASH reader doubles a relative manifest's folder.
        let manifest = folder.appendingPathComponent("manifest.mpd").path
        for rung in 0..<2 {
            let decoded = try await Tools.run(
                "ffmpeg", ["-v", "error", "-i", manifest, "-map", "0:v:\(rung)", "-f", "null", "-", "-progress", "-"])
            #expect(decoded.status == 0, "\(decoded.stderr)")
            let frames = decoded.stdout.split(separator: "\n").last { $0.hasPrefix("frame=") }
            #expect(frames == "frame=\(sourceFrames)", "rung \(rung): \(frames ?? "none"), source \(sourceFrames)")
        }
        let audio = try await Tools.run("ffmpeg", ["-v", "error", "-i", manifest, "-map", "0:a", "-f", "null", "-"])
        #expect(audio.status == 0, "\(audio.stderr)")
    }

    /// `--json`'s completion of a ladder says `hls` and lists its renditions, each playlist and segment
    /// count as found in the folder, each peak as the master playlist declares it.
    @Test func theJSONCompletionOfALadderListsItsRenditions() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let out = Fixtures.scratchFolder("ladder-json").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "640x360,320x180", "-o", out.path, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let last = try #require(result.stdout.split(separator: "\n").last)
        let completion = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        #expect(completion["event"] as? String == "completed" && completion["type"] as? String == "hls")
        let ladder = try #require(completion["ladder"] as? [String: Any], "\(completion)")
        #expect(ladder["master"] as? String == "master.m3u8")
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let audioPeak = (ladder["audio"] as? [String: Any])?["peakBitrate"] as? Int ?? 0
        let renditions = try #require(ladder["video"] as? [[String: Any]])
        #expect(renditions.count == 2)
        for rendition in renditions {
            let playlist = try #require(rendition["playlist"] as? String)
            let text = try String(contentsOf: out.appendingPathComponent(playlist), encoding: .utf8)
            let segments = text.split(separator: "\n").filter { $0.hasSuffix(".m4s") }
            #expect(rendition["segments"] as? Int == segments.count, "\(playlist)")
            let folder = out.appendingPathComponent(playlist).deletingLastPathComponent()
            for segment in segments {
                #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(String(segment)).path))
            }
            let peak = try #require(rendition["peakBitrate"] as? Int)
            #expect(master.contains("BANDWIDTH=\(peak + audioPeak),"), "\(playlist): \(peak) + \(audioPeak)")
        }
    }

    @Test func interruptingALadderLeavesNoFolder() async throws {
        let parent = Fixtures.scratchFolder("ladder-cancel")
        let export = try ReelBinary.start([
            "export", try await Fixtures.url(Fixtures.long).path, "--type", "hls", "--ladder", "1280x720,640x360",
            "-o", parent.appendingPathComponent("out").path, "--json",
        ])
        func events() -> [[String: Any]] {
            export.output.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }
        let encoding = await eventually {
            events().contains { $0["event"] as? String == "progress" && ($0["frames"] as? Int ?? 0) > 0 } ? true : nil
        }
        #expect(encoding != nil, "no progress: \(export.output.suffix(600))")
        // The hidden folder being written is there before the interrupt.
        #expect((try? FileManager.default.contentsOfDirectory(atPath: parent.path))?.isEmpty == false)
        export.signal(SIGINT)
        let ended = try await export.exit()
        #expect(ended.status != 0, "output: \(export.output.suffix(600))")
        let last = try #require(events().last)
        #expect((last["error"] as? [String: Any])?["code"] as? String == "cancelled", "\(last)")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: parent.path))?.isEmpty == true)
    }

    /// A ladder export killed outright cannot remove its hidden folder; the next export of the same
    /// destination does (nobody holds its lock any more), while one still being written is left alone.
    @Test func aKilledLaddersFolderIsRemovedByTheNextExport() async throws {
        let parent = Fixtures.scratchFolder("ladder-killed")
        let out = parent.appendingPathComponent("out")
        let arguments = [
            "export", try await Fixtures.url(Fixtures.long).path, "--type", "hls", "--ladder", "640x360", "-o",
            out.path, "--json",
        ]
        func hidden() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: parent.path)) ?? []).filter { $0.hasPrefix(".") }
        }
        func started(_ export: BackgroundProcess) async -> Bool {
            await eventually { export.output.contains("\"frames\":") && !hidden().isEmpty ? true : nil } == true
        }
        let killed = try ReelBinary.start(arguments)
        #expect(await started(killed), "no progress: \(killed.output.suffix(600))")
        killed.signal(SIGKILL)
        _ = try await killed.exit()
        let left = hidden()
        #expect(left.count == 1, "\(left)")
        // The next export of the destination removes it, and holds its own folder locked: a third one,
        // run while the second is paused mid-way, leaves that folder alone and publishes its own.
        let running = try ReelBinary.start(arguments)
        #expect(await started(running))
        #expect(await eventually { hidden().count == 1 && hidden() != left ? true : nil } == true, "\(hidden())")
        let writing = hidden()
        running.signal(SIGSTOP)
        let third = try await ReelBinary.run([
            "export", try await Fixtures.url(Fixtures.ladderSource).path, "--type", "hls", "--ladder", "320x180", "-o",
            out.path,
        ])
        #expect(third.status == 0, "\(third.stderr)")
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("master.m3u8").path))
        #expect(hidden() == writing, "the paused export's folder was touched: \(hidden())")
        running.signal(SIGCONT)
        running.signal(SIGINT)
        _ = try await running.exit()
        #expect(hidden().isEmpty, "\(hidden())")
    }

    @Test(arguments: [
        (["--ladder", "1280x"], "cannot read the ladder rung '1280x'"),
        (["--ladder", "640x360,640x360"], "names 640x360 twice"),
        (["--ladder", "640x360", "--segment-duration", "0"], "segment duration '0'"),
        ([], "needs its rungs"),
        (["--ladder", "1920x1080,1280x720"], "larger than the source (640x360)"),
    ])
    func aBadLadderFailsInOneLineAndWritesNothing(_ options: [String], _ message: String) async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let parent = Fixtures.scratchFolder("ladder-bad")
        let result = try await ReelBinary.run(
            ["export", source.path, "--type", "hls", "-o", parent.appendingPathComponent("out").path] + options)
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(message), "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }
}
