import Foundation
import TestSupport
import Testing

/// `reel image --resize` and `--delivery` as PhotoKit's resizeMode and deliveryMode, on a HEIC that
/// heif-enc gives an embedded thumbnail (`-t 320`: 320x240 beside the 1280x960 picture). Which picture
/// was used is proved by pixels: a render equals (ffmpeg's PSNR: infinite) vips's own render of the
/// source it claims, the main picture or the thumbnail item.
@Suite("Image requests", .tags(.process, .media), .timeLimit(.minutes(10)))
struct ImageRequestTests {
    static func heic(_ folder: URL) async throws -> URL {
        let source = folder.appendingPathComponent("source.png")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1280x960", "-frames:v", "1", source.path])
        let heic = folder.appendingPathComponent("thumbed.heic")
        let made = try await Tools.run("heif-enc", ["-q", "60", "-t", "320", "-o", heic.path, source.path])
        try #require(made.status == 0, "\(made.stderr)")
        return heic
    }

    /// The JSON lines `reel image … --json` printed.
    static func image(_ arguments: [String]) async throws -> [[String: Any]] {
        let result = try await ReelBinary.run(["image"] + arguments + ["--json"])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    /// ffmpeg's PSNR of `a` against `b` (infinity when identical).
    static func psnr(_ a: URL, _ b: URL) async throws -> Double {
        let result = try await Tools.run("ffmpeg", ["-i", a.path, "-i", b.path, "-lavfi", "psnr", "-f", "null", "-"])
        let average = try #require(result.stderr.firstMatch(of: #/average:([0-9.]+|inf)/#), "\(result.stderr)")
        return average.1 == "inf" ? .infinity : Double(average.1) ?? 0
    }

    /// `vips` itself, writing a reference picture.
    static func vips(_ arguments: [String]) async throws {
        let result = try await Tools.run("vips", arguments)
        try #require(result.status == 0, "vips \(arguments): \(result.stderr)")
    }

    @Test func theEmbeddedThumbnailIsUsedOnlyWhereFastAllowsIt() async throws {
        let folder = Fixtures.scratchFolder("resize-modes")
        let heic = try await Self.heic(folder)
        let out = { (name: String) in folder.appendingPathComponent(name) }
        // vips's renders of each source: the main picture fitted into 200x200, the thumbnail item as it is.
        try await Self.vips(["thumbnail_image", heic.path, out("main-200.png").path, "200", "--height", "200"])
        try await Self.vips(["copy", heic.path + "[thumbnail=true]", out("thumbnail.png").path])
        try await Self.vips([
            "thumbnail_image", heic.path + "[thumbnail=true]", out("thumbnail-200.png").path, "200", "--height", "200",
        ])

        // fast, 200x200: the render would be 200x150; the 320x240 thumbnail is larger, so it is returned
        // as it is (the nearest larger size the file has).
        let fast = try #require(
            try await Self.image([heic.path, "--size", "200x200", "--resize", "fast", "-o", out("fast.png").path]).first
        )
        #expect(fast["width"] as? Int == 320 && fast["height"] as? Int == 240, "\(fast)")
        #expect(fast["source"] as? String == "embedded-thumbnail" && fast["degraded"] as? Bool == false)
        #expect(try await Self.psnr(out("fast.png"), out("thumbnail.png")) == .infinity)

        // exact, the same size: exactly 200x150, from the main picture, not the thumbnail.
        let exact = try #require(
            try await Self.image([heic.path, "--size", "200x200", "--resize", "exact", "-o", out("exact.png").path])
                .first)
        #expect(exact["width"] as? Int == 200 && exact["height"] as? Int == 150, "\(exact)")
        #expect(exact["source"] as? String == "picture")
        #expect(try await Self.psnr(out("exact.png"), out("main-200.png")) == .infinity)
        let fromThumbnail = try await Self.psnr(out("exact.png"), out("thumbnail-200.png"))
        #expect(fromThumbnail < 45, "the exact render looks like the thumbnail's: \(fromThumbnail) dB")

        // fast, larger than the thumbnail (400x300 needed): the main picture, at the size asked.
        let larger = try #require(
            try await Self.image([heic.path, "--size", "400x400", "--resize", "fast", "-o", out("larger.png").path])
                .first)
        #expect(
            larger["width"] as? Int == 400 && larger["height"] as? Int == 300
                && larger["source"] as? String == "picture")
        // fast with fill: covering 300x300 needs 400x300, more than the thumbnail has.
        let filled = try #require(
            try await Self.image([
                heic.path, "--size", "300x300", "--content-mode", "fill", "--resize", "fast", "-o",
                out("fill.png").path,
            ]).first)
        #expect(
            filled["width"] as? Int == 300 && filled["height"] as? Int == 300
                && filled["source"] as? String == "picture")

        // none: the picture as stored, whatever the size.
        let none = try #require(
            try await Self.image([heic.path, "--size", "200x200", "--resize", "none", "-o", out("none.png").path]).first
        )
        #expect(none["width"] as? Int == 1280 && none["height"] as? Int == 960, "\(none)")
        let probed = try #require(try await ProbedFile.probe(out("none.png")).video)
        #expect(probed.width == 1280 && probed.height == 960)

        // A crop needs exact.
        let refused = try await ReelBinary.run([
            "image", heic.path, "--size", "200x200", "--resize", "fast", "--crop", "0,0,0.5,0.5", "-o",
            out("c.png").path,
        ])
        #expect(refused.status == 64 && refused.stderr.contains("--resize exact"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out("c.png").path))
    }

    @Test func opportunisticDeliveryWritesTheDegradedImageFirst() async throws {
        let folder = Fixtures.scratchFolder("delivery")
        let heic = try await Self.heic(folder)
        let out = { (name: String) in folder.appendingPathComponent(name) }

        // A HEIC: its embedded thumbnail first, then the final picture at the same path, one request.
        let lines = try await Self.image([
            heic.path, "--size", "1000x1000", "--delivery", "opportunistic", "-o", out("o.jpg").path,
        ])
        try #require(lines.count == 2, "\(lines)")
        #expect(lines[0]["degraded"] as? Bool == true && lines[1]["degraded"] as? Bool == false)
        #expect(lines[0]["source"] as? String == "embedded-thumbnail" && lines[1]["source"] as? String == "picture")
        #expect(lines[0]["width"] as? Int == 320 && lines[0]["height"] as? Int == 240, "\(lines[0])")
        #expect(lines[1]["width"] as? Int == 1000 && lines[1]["height"] as? Int == 750, "\(lines[1])")
        let request = try #require(lines[0]["requestID"] as? String)
        #expect(
            lines[1]["requestID"] as? String == request && lines[0]["file"] as? String == lines[1]["file"] as? String)
        let final = try #require(try await ProbedFile.probe(out("o.jpg")).video)
        #expect(final.width == 1000 && final.height == 750)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }.isEmpty)

        // fast delivery: the quick picture alone.
        let fast = try await Self.image([
            heic.path, "--size", "1000x1000", "--delivery", "fast", "-o", out("f.png").path,
        ])
        #expect(fast.count == 1 && fast.first?["degraded"] as? Bool == true, "\(fast)")
        #expect(try await Self.psnr(out("f.png"), try await Self.thumbnailReference(heic, folder)) == .infinity)

        // A JPEG: decoded at 1/8 first (1600x1200 gives 200x150), then the final picture.
        let jpeg = out("photo.jpg")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1600x1200", "-frames:v", "1", jpeg.path])
        let jpegLines = try await Self.image([
            jpeg.path, "--size", "800x800", "--delivery", "opportunistic", "-o", out("j.jpg").path,
        ])
        try #require(jpegLines.count == 2, "\(jpegLines)")
        #expect(jpegLines[0]["source"] as? String == "reduced-decode" && jpegLines[0]["width"] as? Int == 200)
        #expect(jpegLines[1]["degraded"] as? Bool == false && jpegLines[1]["width"] as? Int == 800)

        // A PNG has no cheaper picture: one final image.
        let png = out("photo.png")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=640x480", "-frames:v", "1", png.path])
        let pngLines = try await Self.image([
            png.path, "--size", "320x320", "--delivery", "opportunistic", "-o", out("p.jpg").path,
        ])
        #expect(pngLines.count == 1 && pngLines.first?["degraded"] as? Bool == false, "\(pngLines)")

        // A crop has no quick picture (the thumbnail is of the whole photo): the final image alone.
        let cropped = try await Self.image([
            heic.path, "--size", "200x200", "--crop", "0,0,0.5,0.5", "--delivery", "opportunistic", "-o",
            out("c.jpg").path,
        ])
        #expect(cropped.count == 1 && cropped.first?["width"] as? Int == 200, "\(cropped)")

        // high-quality, the default: one final image, even for a HEIC with a thumbnail.
        let high = try await Self.image([heic.path, "--size", "1000x1000", "-o", out("h.jpg").path])
        #expect(
            high.count == 1 && high.first?["degraded"] as? Bool == false
                && high.first?["deliveryMode"] as? String == "high-quality")
    }

    static func thumbnailReference(_ heic: URL, _ folder: URL) async throws -> URL {
        let reference = folder.appendingPathComponent("thumbnail-reference.png")
        try await vips(["copy", heic.path + "[thumbnail=true]", reference.path])
        return reference
    }
}
