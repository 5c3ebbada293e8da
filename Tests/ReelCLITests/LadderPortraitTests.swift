import Foundation
import TestSupport
import Testing

/// Ladders of phone footage held upright: each rung's box is turned to the source's orientation (as a
/// video preset's box is, and AVFoundation's `AVAssetExportPreset1920x1080` makes 1080x1920 of a
/// portrait video), so a portrait source's rungs are portrait at the boxes' sizes, not pillar-sized
/// inside landscape boxes. Checked with ffprobe (sizes, no display matrix left), ffmpeg's own
/// auto-rotation (the pixels upright) and Python's XML parser (the MPD).
@Suite("Portrait ladders", .tags(.process, .media), .timeLimit(.minutes(10)))
struct LadderPortraitTests {
    /// A 640x360 stream turned a quarter by its display matrix, and a 360x640 stream, both shown as
    /// 360x640: under 1280x720,640x360,480x270,320x180 the rungs are 360x640, 270x480 and 180x320
    /// (the boxes turned; a landscape reading fitted 202x360, 152x270 and 102x180), and the
    /// 1280x720 box, turned to 720x1280 and larger than the source, is dropped. RESOLUTION and the
    /// MPD say the upright sizes; the pixels are upright; segments start with aligned keyframes.
    @Test(arguments: [Fixtures.ladderPortraitRotated, Fixtures.ladderPortrait])
    func aPortraitSourceMakesPortraitRungs(_ recipe: Fixtures.Recipe) async throws {
        let source = try await Fixtures.url(recipe)
        let out = Fixtures.scratchFolder("ladder-portrait").appendingPathComponent("out")
        let result = try await ReelBinary.run([
            "export", source.path, "--type", "hls", "--ladder", "1280x720,640x360,480x270,320x180",
            "--segment-duration", "1", "--manifests", "hls,dash", "-o", out.path,
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let expected = [(360, 640), (270, 480), (180, 320)]

        // ffprobe opens the master playlist: one program per kept rung, each at its upright size.
        let masterURL = out.appendingPathComponent("master.m3u8")
        let probe = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v", "-show_entries", "stream=width,height", "-of", "csv=p=0",
                masterURL.path,
            ])
        #expect(probe.status == 0, "\(probe.stderr)")
        let sizes = Set(probe.stdout.split(separator: "\n").map(String.init))
        #expect(sizes == Set(expected.map { "\($0.0),\($0.1)" }), "\(probe.stdout)")

        let master = try String(contentsOf: masterURL, encoding: .utf8)
        let variants = LadderTests.variants(master)
        try #require(variants.count == expected.count, "\(master)")
        var starts: [[Double]] = []
        for (variant, (width, height)) in zip(variants, expected) {
            #expect(variant.attributes["RESOLUTION"] == "\(width)x\(height)", "\(variant.attributes)")
            let playlist = out.appendingPathComponent(variant.uri)
            // The rotation is in the pixels: no display matrix is left for a player to apply again.
            let video = try #require(try await ProbedFile.probe(playlist).video)
            #expect(video.width == width && video.height == height, "\(variant.uri): \(video)")
            #expect(!video.hasDisplayMatrix, "\(variant.uri): \(video.side_data_list ?? [])")
            // Upright: close to ffmpeg's auto-rotated source scaled to the rung, far from it turned
            // half round (what the other quarter turn would have made, at the same size).
            let scale = "scale=\(width):\(height):flags=bicubic"
            let right = try await Pictures.psnr(playlist, against: source, referenceFilters: scale)
            let wrong = try await Pictures.psnr(playlist, against: source, referenceFilters: scale + ",hflip,vflip")
            #expect(right.average >= 30 && right.average > wrong.average + 10, "\(variant.uri): \(right) vs \(wrong)")
            let (segments, _, _) = try await LadderTests.segments(of: playlist)
            #expect(segments.allSatisfy { $0.startsWithKeyframe }, "\(variant.uri)")
            starts.append(segments.map(\.firstPts))
        }
        // Every rung's segments start at the same times: 0, 1 and 2 s.
        #expect(starts.allSatisfy { $0 == starts[0] }, "\(starts)")
        #expect(starts[0].count == 3 && zip(starts[0], [0.0, 1, 2]).allSatisfy { abs($0 - $1) < 0.001 }, "\(starts)")

        // The MPD read by Python's XML parser: the same upright sizes, and the set's largest.
        let script = """
            import sys, xml.etree.ElementTree as T
            ns = {"d": "urn:mpeg:dash:schema:mpd:2011"}
            root = T.parse(sys.argv[1]).getroot()
            for s in root.iterfind(".//d:AdaptationSet[@contentType='video']", ns):
                print("set", s.get("maxWidth"), s.get("maxHeight"))
                for r in s.iterfind("d:Representation", ns):
                    print(r.get("width"), r.get("height"))
            """
        let mpd = try await Tools.run("python3", ["-c", script, out.appendingPathComponent("manifest.mpd").path])
        #expect(mpd.status == 0, "\(mpd.stderr)")
        let lines = mpd.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "set 360 640", "\(mpd.stdout)")
        #expect(Array(lines.dropFirst()) == expected.map { "\($0.0) \($0.1)" }, "\(mpd.stdout)")
    }
}
