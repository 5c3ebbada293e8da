import Foundation
import TestSupport
import Testing

/// An HDR ladder also carries SDR rungs (Apple's HLS authoring rules: "for backward compatibility SDR
/// streams MUST be provided"): under an HEVC preset a 10-bit HLG or PQ source makes HEVC Main 10 rungs
/// keeping its HDR and, in the same boxes, H.264 rungs tone-mapped to SDR by the exports' own tone
/// mapper, from the same decode, listed first. Checked with Python's `m3u8` package (the master
/// playlist), ffprobe (streams, tags, keyframes, segments), ffmpeg's psnr filter (the pictures against
/// a plain SDR export of the same source) and Python's XML parser (the MPD), never with Reel's own
/// reader; headless Chromium plays the SDR set (LadderPlaybackTests).
@Suite("SDR rungs beside HDR ones", .tags(.process, .media, .browser), .timeLimit(.minutes(10)))
struct LadderSDRRungsTests {
    /// `reel export source --preset HEVC1920x1080 --ladder 640x360,320x180` in 1 s segments with both
    /// manifests, `--json`; returns the folder and the JSON lines.
    static func ladder(_ source: URL, _ label: String, extra: [String] = []) async throws -> (
        folder: URL, events: [[String: Any]]
    ) {
        let out = Fixtures.scratchFolder("ladder-sdr-\(label)").appendingPathComponent("out")
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--preset", "HEVC1920x1080", "--ladder", "640x360,320x180",
                "--segment-duration", "1", "--manifests", "hls,dash", "-o", out.path, "--json",
            ] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return (out, events)
    }

    /// One variant of the master playlist as Python's `m3u8` package (Debian's python3-m3u8, which
    /// Scripts/setup installs, run by Debian's /usr/bin/python3) reads it.
    struct Variant: Decodable {
        var uri: String
        var codecs: String?
        var range: String?
        var resolution: [Int]?
        var bandwidth: Int?
        var average: Int?
        var audio: String?
    }

    struct Master: Decodable {
        struct Media: Decodable {
            var type: String?
            var uri: String?
            var group: String?
        }
        var variants: [Variant]
        var media: [Media]
    }

    static func master(_ url: URL) async throws -> Master {
        let script = """
            import json, sys, m3u8
            p = m3u8.load(sys.argv[1])
            print(json.dumps({
                "variants": [{"uri": v.uri, "codecs": v.stream_info.codecs, "range": v.stream_info.video_range,
                              "resolution": list(v.stream_info.resolution) if v.stream_info.resolution else None,
                              "bandwidth": v.stream_info.bandwidth, "average": v.stream_info.average_bandwidth,
                              "audio": v.stream_info.audio} for v in p.playlists],
                "media": [{"type": m.type, "uri": m.uri, "group": m.group_id} for m in p.media]}))
            """
        // Debian's own Python, which the package is for (a python3 earlier on PATH may lack it).
        let result = try await Tools.run("/usr/bin/python3", ["-c", script, url.path])
        try #require(result.status == 0, "Python's m3u8 (Scripts/setup installs python3-m3u8): \(result.stderr)")
        return try JSONDecoder().decode(Master.self, from: Data(result.stdout.utf8))
    }

    /// `avc1.PPCCLL` from an init segment's `avcC` record (its bytes 1-3).
    static func avcCodecs(_ initFile: URL) throws -> String {
        let record = try MP4Boxes.videoSampleEntryRecord(initFile, named: "avcC")
        guard record.count >= 4 else { throw ToolFailure(message: "a short avcC in \(initFile.path)") }
        return "avc1." + record[1..<4].map { String(format: "%02x", $0) }.joined()
    }

    /// Both sets from an HLG and a PQ source: the master lists the SDR variants first (H.264 High,
    /// `VIDEO-RANGE=SDR`, CODECS from each `avcC`), then the HDR ones (`hvc1.2.4…`, the source's range),
    /// every one with the one AAC rendition; the SDR rungs are 8-bit BT.709 tagged with no HDR side
    /// data left, the HDR ones Main 10 in the source's transfer; every rung's segments start with
    /// keyframes at the same times; BANDWIDTH covers each SDR variant's segments; the MPD has the SDR
    /// set and the HDR set, each with its colours; `--json`'s progress and completion name the SDR
    /// renditions and their files. And the pictures: the SDR rungs are what a plain SDR export of the
    /// source (`--preset 640x480`, the H.264 presets' tone mapping) shows, far from the source's
    /// HDR pictures merely converted to BT.709's matrix (what a player without tone mapping shows).
    @Test(arguments: [("arib-std-b67", "HLG", 18), ("smpte2084", "PQ", 16)])
    func anHDRLadderWritesBothSets(_ transfer: String, _ range: String, _ cicp: Int) async throws {
        let source = try await Fixtures.url(transfer == "smpte2084" ? Fixtures.ladderPQ : Fixtures.ladderHLG)
        let (out, events) = try await Self.ladder(source, range)
        let master = try await Self.master(out.appendingPathComponent("master.m3u8"))
        let uris = master.variants.map(\.uri)
        #expect(uris == ["s0/index.m3u8", "s1/index.m3u8", "v0/index.m3u8", "v1/index.m3u8"], "\(uris)")
        #expect(master.variants.map(\.range) == ["SDR", "SDR", range, range], "\(master.variants)")
        let audio = master.media.filter { $0.type == "AUDIO" }
        #expect(audio.count == 1 && master.variants.allSatisfy { $0.audio == audio.first?.group }, "\(master)")

        var keyframes: [String: [Double]] = [:]
        for variant in master.variants {
            let rung = String(variant.uri.prefix { $0 != "/" })
            let joined = try LadderHDRTests.joined(out, rung)
            let fields = try await LadderHDRTests.stream(
                joined,
                "stream=codec_name,profile,pix_fmt,width,height,color_range,color_transfer,color_primaries,color_space"
            )
            #expect(variant.resolution == [Int(fields["width"] ?? ""), Int(fields["height"] ?? "")].compactMap { $0 })
            if variant.range == "SDR" {
                #expect(
                    fields["codec_name"] == "h264" && fields["profile"] == "High" && fields["pix_fmt"] == "yuv420p"
                        && fields["color_range"] == "tv" && fields["color_transfer"] == "bt709"
                        && fields["color_primaries"] == "bt709" && fields["color_space"] == "bt709",
                    "\(rung): \(fields)")
                let codecs = try Self.avcCodecs(out.appendingPathComponent("\(rung)/init.mp4"))
                #expect(variant.codecs == "\(codecs),mp4a.40.2", "\(rung): \(variant.codecs ?? "none") vs \(codecs)")
                let side = try await ProbedFile.firstFrameSideData(joined).compactMap(\.side_data_type)
                #expect(
                    !side.contains("Mastering display metadata") && !side.contains("Content light level metadata"),
                    "\(rung): \(side)")
                // BANDWIDTH: at least every segment's rate; AVERAGE-BANDWIDTH below it.
                let (segments, _, _) = try await LadderTests.segments(of: out.appendingPathComponent(variant.uri))
                let peak = try #require(segments.map(\.bitrate).max())
                #expect(Double(variant.bandwidth ?? 0) >= peak && (variant.average ?? .max) < (variant.bandwidth ?? 0))
            } else {
                #expect(
                    fields["codec_name"] == "hevc" && fields["profile"] == "Main 10"
                        && fields["pix_fmt"] == "yuv420p10le" && fields["color_transfer"] == transfer
                        && fields["color_primaries"] == "bt2020", "\(rung): \(fields)")
                #expect(variant.codecs?.hasPrefix("hvc1.2.4.") == true, "\(variant)")
            }
            // Each segment starts with a keyframe, at 0, 1 and 2 s, in every rung.
            let starts = try await LadderHDRTests.segmentStarts(out, rung)
            #expect(starts.map(\.key) == [true, true, true], "\(rung): \(starts)")
            #expect(
                starts.count == 3 && zip(starts, [0.0, 1, 2]).allSatisfy { abs($0.seconds - $1) < 0.001 },
                "\(rung): \(starts)")
            keyframes[rung] = try await LadderHDRTests.keyframeTimes(joined)
        }
        #expect(keyframes.count == 4 && Set(keyframes.values).count == 1 && keyframes["s0"]?.count == 3, "\(keyframes)")

        // The MPD: the SDR set (id 0, H.264, BT.709 supplemental) and the HDR set (id 1, HEVC, the
        // transfer essential, BT.2020), the codecs as in the master playlist.
        let mpd = try await Tools.run(
            "python3", ["-c", LadderHDRTests.mpdSets, out.appendingPathComponent("manifest.mpd").path])
        #expect(mpd.status == 0, "\(mpd.stderr)")
        let lines = mpd.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let expected = master.variants.map { variant -> [String] in
            let video = String((variant.codecs ?? "").prefix { $0 != "," })
            return variant.range == "SDR"
                ? [video, "None", "1", "1", "1", "0"] : [video, "\(cicp)", "None", "9", "9", "1"]
        }
        #expect(lines == expected, "\(mpd.stdout)")

        // `--json`: progress names every rendition, the completion lists the SDR rungs' files.
        let named = Set(
            events.filter { $0["event"] as? String == "progress" }.flatMap {
                ($0["renditions"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            })
        #expect(named == ["v0", "v1", "s0", "s1", "a"], "\(named)")
        let completion = try #require(events.last)
        let ladder = try #require(completion["ladder"] as? [String: Any], "\(completion)")
        let files = try #require(ladder["files"] as? [String])
        for rung in ["s0", "s1"] {
            #expect(files.contains("\(rung)/init.mp4") && files.contains("\(rung)/seg_00002.m4s"), "\(files)")
        }
        #expect((ladder["video"] as? [[String: Any]])?.compactMap { $0["playlist"] as? String } == uris)

        try await Self.checkPictures(out, source: source)
    }

    /// The SDR rungs against a plain SDR export of the same source (`--preset 640x480`: 640x360, the
    /// H.264 presets' tone mapping): the top SDR rung is the same picture but for the two encodes, the
    /// lower one the same scaled down (tone-mapped before scaling, not after); both far from the HDR
    /// pictures merely converted to BT.709's matrix, and in chroma above all (the washed-out
    /// signature, HDR-NOTES §3.7). Measured: 42.4 and 41.4 dB against the plain export (HLG and PQ
    /// alike), 18.2 (HLG) and 14.2 (PQ) against the matrix alone; another tone mapper, ffmpeg's
    /// zscale + tonemap mobius chain (HDR-NOTES §7), scored 33.7 dB against the top HLG rung, so 38 dB
    /// says the exports' own tone mapper made these pictures.
    static func checkPictures(_ out: URL, source: URL) async throws {
        let plain = out.deletingLastPathComponent().appendingPathComponent("plain.mp4")
        let export = try await ReelBinary.run(["export", source.path, "--preset", "640x480", "-o", plain.path])
        try #require(export.status == 0, "\(export.stderr)")
        for (rung, width, height) in [("s0", 640, 360), ("s1", 320, 180)] {
            let joined = try LadderHDRTests.joined(out, rung)
            let scale = "scale=\(width):\(height):flags=bicubic"
            let same = try await Pictures.psnr(joined, against: plain, referenceFilters: scale)
            let matrixOnly = try await Pictures.psnr(
                joined, against: source,
                referenceFilters: "\(scale):in_color_matrix=bt2020:out_color_matrix=bt709:in_range=tv:out_range=tv")
            #expect(same.average >= 38 && same.v >= 38, "\(rung) against the plain export: \(same)")
            #expect(
                same.average > matrixOnly.average + 8 && same.v > matrixOnly.v + 10,
                "\(rung): \(same) against the plain export, \(matrixOnly) against the matrix alone")
        }
    }

    /// `--no-sdr-rungs` writes the HDR rungs only, as before SDR rungs existed.
    @Test func optingOutWritesOnlyTheHDRRungs() async throws {
        let source = try await Fixtures.url(Fixtures.ladderHLG)
        let (out, _) = try await Self.ladder(source, "none", extra: ["--no-sdr-rungs"])
        let names = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
        #expect(names == ["a", "manifest.mpd", "master.m3u8", "v0", "v1"], "\(names)")
        let master = try await Self.master(out.appendingPathComponent("master.m3u8"))
        #expect(master.variants.map(\.range) == ["HLG", "HLG"], "\(master.variants)")
        #expect(master.variants.allSatisfy { $0.codecs?.hasPrefix("hvc1.2.4.") == true }, "\(master.variants)")
    }

    /// A damaged SDR segment (REEL_TEST_OUTPUT_FAULT, debug builds: the last rung written, here the
    /// SDR one) fails the read-back before publishing, as any rung's does: one line naming it, nothing
    /// published.
    @Test func theReadBackChecksTheSDRRungsToo() async throws {
        let source = try await Fixtures.url(Fixtures.ladderHLG)
        let parent = Fixtures.scratchFolder("ladder-sdr-fault")
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--preset", "HEVC1920x1080", "--ladder", "320x180", "--segment-duration", "1",
                "-o", parent.appendingPathComponent("out").path,
            ], environment: ["REEL_TEST_OUTPUT_FAULT": "truncate"])
        #expect(result.status != 0)
        let lines = result.stderr.split(separator: "\n")
        #expect(
            lines.count == 1 && lines[0].contains("ladder verification: s0/seg_00001.m4s")
                && lines[0].contains("bytes"),
            "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }
}

extension LadderPlaybackTests {
    /// Chromium (no HEVC in its Media Source Extensions here) plays an HLG ladder's SDR set: the page
    /// takes the master's `VIDEO-RANGE=SDR` variants (`?range=SDR`), the H.264 rungs, and plays them
    /// to the end switching rung mid-play, every frame decoded, none corrupted.
    @Test func chromiumPlaysTheSDRRungsOfAnHDRLadder() async throws {
        let chromium = try Self.chromium()
        let source = try await Fixtures.url(Fixtures.ladderHLG)
        let root = Fixtures.scratchFolder("ladder-play-sdr")
        let folder = root.appendingPathComponent("out")
        let export = try await ReelBinary.run([
            "export", source.path, "--preset", "HEVC1920x1080", "--ladder", "640x360,320x180", "--segment-duration",
            "1", "-o", folder.path,
        ])
        try #require(export.status == 0, "\(export.stderr)")
        let frames = try #require(try await ProbedFile.probe(source, countFrames: true).video?.frames)
        let segments = try String(contentsOf: folder.appendingPathComponent("s0/index.m3u8"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
        try #require(segments.count == 3, "3 s in 1 s segments: \(segments)")
        let expectedVideo =
            ["320x180 init"] + segments[..<1].map { "320x180 \($0)" } + ["640x360 init"]
            + segments[1...].map { "640x360 \($0)" }

        let dom = try await Self.play(root, chromium, query: "range=SDR")
        let outcome = try Self.outcome(in: dom)
        let summary = "Chromium reported: \(try Self.outcomeText(in: dom))"

        #expect(outcome.errors.isEmpty && outcome.ended, "\(summary)")
        // The master lists both sets; the page played the SDR one, whose codecs MSE supports.
        let listed = outcome.listed ?? []
        #expect(listed.count == 4 && listed.filter { $0.hasPrefix("SDR avc1.") }.count == 2, "\(summary)")
        #expect(outcome.supported.count == 3 && outcome.supported.values.allSatisfy { $0 }, "\(summary)")
        #expect(outcome.supported.keys.allSatisfy { !$0.contains("hvc1") }, "\(summary)")
        #expect(outcome.appended.filter { !$0.hasPrefix("audio") } == expectedVideo, "\(summary)")
        let quality = try #require(outcome.quality, "\(summary)")
        #expect(quality.total == frames && quality.corrupted == 0 && quality.dropped * 4 < frames, "\(summary)")
        #expect(outcome.videoWidth == 640 && outcome.videoHeight == 360, "\(summary)")
        #expect(outcome.videoBuffered.count == 1 && outcome.audioBuffered.count == 1, "\(summary)")
    }
}
