import Foundation
import TestSupport
import Testing

/// HDR kept in a ladder: under an HEVC preset that keeps 10-bit (`--preset HEVC1920x1080`), HLG and
/// PQ sources make HEVC Main 10 rungs in their own transfer, with VIDEO-RANGE, CODECS from the
/// `hvcC` box and the MPD's colour properties. Checked with ffprobe, ffmpeg's PSNR filter and
/// Python's XML parser, never with Reel's own reader. Chromium has no HEVC decoder, so no browser
/// plays these rungs (LadderPlaybackTests covers the H.264 ones). The H.264 SDR rungs written beside
/// them are LadderSDRRungsTests'.
@Suite("HDR ladders", .tags(.process, .media, .browser), .timeLimit(.minutes(10)))
struct LadderHDRTests {
    static let rungs = ["v0", "v1", "v2"]

    /// Runs `reel export` of `source` into a new folder as an HEVC ladder of three rungs in 1 s
    /// segments with both manifests; returns the folder.
    static func ladder(_ source: URL, _ label: String, extra: [String] = []) async throws -> URL {
        let out = Fixtures.scratchFolder("ladder-\(label)").appendingPathComponent("out")
        let result = try await ReelBinary.run(
            [
                "export", source.path, "--preset", "HEVC1920x1080", "--ladder", "640x360,480x270,320x180",
                "--segment-duration", "1", "--manifests", "hls,dash", "-o", out.path,
            ] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return out
    }

    /// A rung's init segment and media segments as one file (what a player appends), for tools that
    /// read files.
    static func joined(_ folder: URL, _ rung: String) throws -> URL {
        let file = folder.deletingLastPathComponent().appendingPathComponent("\(rung)-joined.mp4")
        try LadderChecksTests.concatenated(folder.appendingPathComponent("\(rung)/index.m3u8")).write(to: file)
        return file
    }

    /// ffprobe's `-show_entries` of `url`'s video stream as key=value pairs.
    static func stream(_ url: URL, _ entries: String) async throws -> [String: String] {
        let probe = try await Tools.run(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", entries, "-of", "default=nw=1", url.path])
        #expect(probe.status == 0, "\(probe.stderr)")
        var fields: [String: String] = [:]
        for line in probe.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }

    /// The presentation times of the keyframes of a file's video (ffprobe's packet flags).
    static func keyframeTimes(_ url: URL) async throws -> [Double] {
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                url.path,
            ])
        #expect(probe.status == 0, "\(probe.stderr)")
        return probe.stdout.split(separator: "\n").compactMap { line -> Double? in
            let parts = line.split(separator: ",")
            guard parts.count >= 2, parts[1].contains("K") else { return nil }
            return Double(parts[0])
        }.sorted()
    }

    /// The first packet of each media segment (read with its init segment before it): its time and
    /// whether it is a keyframe.
    static func segmentStarts(_ folder: URL, _ rung: String) async throws -> [(seconds: Double, key: Bool)] {
        let playlist = try String(contentsOf: folder.appendingPathComponent("\(rung)/index.m3u8"), encoding: .utf8)
        let initData = try Data(contentsOf: folder.appendingPathComponent("\(rung)/init.mp4"))
        var starts: [(Double, Bool)] = []
        for name in playlist.split(separator: "\n") where name.hasSuffix(".m4s") {
            let segment = try Data(contentsOf: folder.appendingPathComponent("\(rung)/\(name)"))
            let probe = try await Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags",
                    "-read_intervals",
                    "%+#1", "-of", "csv=p=0", "-",
                ], input: initData + segment)
            let first = probe.stdout.split(separator: "\n").first?.split(separator: ",") ?? []
            starts.append((first.first.flatMap { Double($0) } ?? -1, first.count > 1 && first[1].contains("K")))
        }
        return starts
    }

    /// The `hvcC` record's general profile_tier_level (its bytes 1-12) in an init segment.
    static func hvcCProfile(_ initFile: URL) throws -> [UInt8] {
        let record = try MP4Boxes.videoSampleEntryRecord(initFile, named: "hvcC")
        guard record.count >= 13 else { throw ToolFailure(message: "a short hvcC in \(initFile.path)") }
        return Array(record[1..<13])
    }

    /// `hvc1.…` (ISO/IEC 14496-15 E.3) from a profile_tier_level, written out here on its own.
    static func codecString(_ ptl: [UInt8]) -> String {
        let space = ["", "A", "B", "C"][Int(ptl[0] >> 6)]
        var compatibility = 0
        for index in 0..<32 where (ptl[1 + index / 8] >> (7 - index % 8)) & 1 == 1 { compatibility |= 1 << index }
        var constraints = ptl[5...10].map { String(format: "%X", $0) }
        while constraints.count > 1 && constraints.last == "0" { constraints.removeLast() }
        let tier = ptl[0] & 0x20 == 0 ? "L" : "H"
        return "hvc1.\(space)\(ptl[0] & 0x1F).\(String(format: "%X", compatibility)).\(tier)\(ptl[11])."
            + constraints.joined(separator: ".")
    }

    @Test(arguments: [("arib-std-b67", "HLG", 18), ("smpte2084", "PQ", 16)])
    func anHDRSourceMakesHEVCMain10RungsInItsTransfer(_ transfer: String, _ range: String, _ cicp: Int) async throws {
        let source = try await Fixtures.url(transfer == "smpte2084" ? Fixtures.ladderPQ : Fixtures.ladderHLG)
        let out = try await Self.ladder(source, range)
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        // The HDR variants; the SDR ones beside them are LadderSDRRungsTests'.
        let all = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        let variants = all.filter { !$0.contains(",VIDEO-RANGE=SDR,") }
        #expect(variants.count == 3 && all.count == 6, "\(master)")
        var keyframes: [[Double]] = []
        for (rung, variant) in zip(Self.rungs, variants) {
            let joined = try Self.joined(out, rung)
            let fields = try await Self.stream(
                joined,
                "stream=codec_name,codec_tag_string,profile,level,pix_fmt,color_transfer,color_primaries,color_space")
            #expect(
                fields["codec_name"] == "hevc" && fields["codec_tag_string"] == "hvc1" && fields["profile"] == "Main 10"
                    && fields["pix_fmt"] == "yuv420p10le", "\(rung): \(fields)")
            #expect(
                fields["color_transfer"] == transfer && fields["color_primaries"] == "bt2020"
                    && fields["color_space"] == "bt2020nc", "\(rung): \(fields)")
            // CODECS as computed here from the hvcC box, and its level as ffprobe reads the SPS.
            let ptl = try Self.hvcCProfile(out.appendingPathComponent("\(rung)/init.mp4"))
            let codecs = Self.codecString(ptl)
            #expect(codecs.hasPrefix("hvc1.2.4.L\(fields["level"] ?? "?")."), "\(codecs) \(fields)")
            #expect(variant.contains("CODECS=\"\(codecs),mp4a.40.2\""), "\(variant)")
            #expect(variant.contains(",VIDEO-RANGE=\(range),"), "\(variant)")
            #expect(!variant.contains("SUPPLEMENTAL-CODECS"))
            if transfer == "smpte2084" {
                let side = try await ProbedFile.firstFrameSideData(joined).compactMap(\.side_data_type)
                #expect(
                    side.contains("Mastering display metadata") && side.contains("Content light level metadata"),
                    "\(rung): \(side)")
            }
            // Each segment starts with a keyframe, at 0, 1 and 2 s.
            let starts = try await Self.segmentStarts(out, rung)
            #expect(starts.map(\.key) == [true, true, true], "\(rung): \(starts)")
            #expect(
                starts.count == 3 && zip(starts, [0.0, 1, 2]).allSatisfy { abs($0.seconds - $1) < 0.001 },
                "\(rung): \(starts)")
            keyframes.append(try await Self.keyframeTimes(joined))
        }
        #expect(keyframes.allSatisfy { $0 == keyframes[0] } && keyframes[0].count == 3, "\(keyframes)")

        // An independent reader of the playlists: ffprobe opens the master and finds every rung.
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-show_entries", "stream=codec_name,profile,width,color_transfer", "-of", "csv=p=0",
                out.appendingPathComponent("master.m3u8").path,
            ])
        #expect(probe.status == 0, "\(probe.stderr)")
        // (A stream with side data, PQ's, ends in an empty field.)
        let streams = Set(
            probe.stdout.split(separator: "\n").map { String($0.reversed().drop { $0 == "," }.reversed()) })
        for width in [640, 480, 320] {
            #expect(streams.contains("hevc,Main 10,\(width),\(transfer)"), "\(streams)")
        }

        // The MPD read by Python's XML parser: codecs as in HLS, the HDR set's transfer essential, BT.2020.
        let mpd = try await Tools.run(
            "python3", ["-c", Self.mpdSets, out.appendingPathComponent("manifest.mpd").path])
        #expect(mpd.status == 0, "\(mpd.stderr)")
        let representations = mpd.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("hvc1.") }
        #expect(representations.count == 3, "\(mpd.stdout)")
        for (line, variant) in zip(representations, variants) {
            let codecs = line.split(separator: " ").first.map(String.init) ?? ""
            let fields = line.split(separator: " ").map(String.init)
            #expect(
                variant.contains("CODECS=\"\(codecs),") && fields.count == 6
                    && Array(fields.dropFirst().prefix(4)) == ["\(cicp)", "None", "9", "9"], "\(line)")
        }
    }

    /// Python printing each video Representation of the MPD at argv[1], one line each: its codecs, then
    /// its AdaptationSet's colour properties (`urn:mpeg:mpegB:cicp:` schemes; an EssentialProperty's
    /// name ends in `!`) as the transfer (essential, then supplemental), primaries and matrix, `None`
    /// where the set has none, then the set's id.
    static let mpdSets = """
        import sys, xml.etree.ElementTree as T
        ns = {"d": "urn:mpeg:dash:schema:mpd:2011"}
        for s in T.parse(sys.argv[1]).getroot().iterfind(".//d:AdaptationSet[@contentType='video']", ns):
            p = {e.get("schemeIdUri").split(":")[-1] + ("!" if e.tag.endswith("EssentialProperty") else ""): e.get("value")
                 for e in list(s) if e.tag.endswith("Property")}
            for r in s.iterfind("d:Representation", ns):
                print(r.get("codecs"), p.get("TransferCharacteristics!"), p.get("TransferCharacteristics"),
                      p.get("ColourPrimaries"), p.get("MatrixCoefficients"), s.get("id"))
        """

    /// The top rung (the source's size) keeps the source's picture: PSNR against the source's frames
    /// in 10-bit (45 dB measured at x265 CRF 24; a tone-mapped or 8-bit round-tripped rung compared
    /// with the HLG frames scores far below). PSNR, not SSIM: SSIM hardly sees a washed-out picture.
    @Test func theTopRungKeepsTheSourcesPicture() async throws {
        let source = try await Fixtures.url(Fixtures.ladderHLG)
        let out = try await Self.ladder(source, "picture")
        let top = try Self.joined(out, "v0")
        let result = try await Tools.run(
            "ffmpeg",
            [
                "-nostdin", "-v", "info", "-i", top.path, "-i", source.path, "-lavfi",
                "[0:v]format=yuv420p10le[a];[1:v]format=yuv420p10le[b];[a][b]psnr", "-f", "null", "-",
            ])
        #expect(result.status == 0, "\(result.stderr.suffix(800))")
        let average = result.stderr.components(separatedBy: " average:").last?.prefix { $0 != " " }
        let psnr = try #require(average.flatMap { Double($0) }, "\(result.stderr.suffix(800))")
        #expect(psnr > 38, "PSNR \(psnr) dB")
    }

    /// An SDR source under the HEVC preset makes 8-bit HEVC Main rungs in BT.709, said to be SDR.
    @Test func anSDRSourceMakesHEVCRungsSaidToBeSDR() async throws {
        let source = try await Fixtures.url(Fixtures.ladderSource)
        let out = Fixtures.scratchFolder("ladder-hevc-sdr").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--preset", "HEVC1920x1080", "--ladder", "640x360,320x180", "--segment-duration",
            "2", "-o", out.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOf: out.appendingPathComponent("master.m3u8"), encoding: .utf8)
        let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        #expect(variants.count == 2 && variants.allSatisfy { $0.contains(",VIDEO-RANGE=SDR,") }, "\(master)")
        // Already SDR: no H.264 SDR rungs beside these.
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("s0").path))
        for (rung, variant) in zip(["v0", "v1"], variants) {
            let fields = try await Self.stream(
                try Self.joined(out, rung), "stream=codec_name,profile,pix_fmt,color_transfer")
            #expect(
                fields == ["codec_name": "hevc", "profile": "Main", "pix_fmt": "yuv420p", "color_transfer": "bt709"],
                "\(rung): \(fields)")
            let codecs = Self.codecString(try Self.hvcCProfile(out.appendingPathComponent("\(rung)/init.mp4")))
            #expect(codecs.hasPrefix("hvc1.1.6.L") && variant.contains("CODECS=\"\(codecs),"), "\(variant)")
        }
    }

    /// Dolby Vision 8.4 keeps its HLG base layer (no Dolby Vision signalling: VIDEO-RANGE=HLG, no
    /// SUPPLEMENTAL-CODECS); profile 5, with no base layer, is refused in one line, nothing written.
    @Test func dolbyVisionKeepsItsBaseLayerOrIsRefused() async throws {
        let kept = Fixtures.scratchFolder("ladder-dv84").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", try await Fixtures.url(Fixtures.dolbyVision84).path, "--preset", "HEVC1920x1080", "--ladder",
            "640x360,320x180", "-o", kept.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let master = try String(contentsOf: kept.appendingPathComponent("master.m3u8"), encoding: .utf8)
        // The HEVC rungs keep the HLG base layer; the H.264 SDR rungs beside them are tone-mapped from it.
        let variants = master.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-STREAM-INF:") }
        let hdr = variants.filter { $0.contains("CODECS=\"hvc1.") }
        #expect(hdr.count == 2 && hdr.allSatisfy { $0.contains(",VIDEO-RANGE=HLG,") }, "\(master)")
        #expect(
            variants.count == 4 && variants.filter { $0.contains(",VIDEO-RANGE=SDR,") }.count == 2, "\(master)")
        #expect(!master.contains("SUPPLEMENTAL-CODECS") && !master.contains("dvh1"), "\(master)")
        let initSegment = try Data(contentsOf: kept.appendingPathComponent("v0/init.mp4"))
        #expect(initSegment.range(of: Data("dvvC".utf8)) == nil && initSegment.range(of: Data("dvcC".utf8)) == nil)

        let parent = Fixtures.scratchFolder("ladder-dv5")
        let refused = try await ReelBinary.run([
            "export", try await Fixtures.url(Fixtures.dolbyVision5).path, "--preset", "HEVC1920x1080", "--ladder",
            "640x360,320x180", "-o", parent.appendingPathComponent("out").path,
        ])
        #expect(refused.status != 0)
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("Dolby Vision profile 5"), "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }
}
