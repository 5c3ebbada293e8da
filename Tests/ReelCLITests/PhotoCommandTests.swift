import Foundation
import TestSupport
import Testing

/// Photos on the command line: `reel thumbnail` renders them (sizes by ffprobe), `reel probe` describes
/// them with the library's metadata, and `reel export` refuses them with its own code, naming the
/// command that renders them, never "corrupt".
@Suite("reel and photos", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PhotoCommandTests {
    /// A JPEG that FFmpeg takes for an image sequence, named as a video to show names do not matter.
    static func jpeg(_ folder: URL, name: String = "train.jpg") async throws -> URL {
        let url = folder.appendingPathComponent(name)
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1600x1200", "-frames:v", "1", "-f", "mjpeg", url.path])
        return url
    }

    @Test func thumbnailRendersTheIPhoneHEICAndAJPEG() async throws {
        let folder = Fixtures.scratchFolder("photo-thumbs")
        let result = try await ReelBinary.run([
            "thumbnail", try PhoneFiles.heic, "--at", "0", "--max-size", "250x250", "-o", folder.path,
        ])
        #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        let heicThumb = folder.appendingPathComponent("IMG_2927-001.jpg")
        let probed = try #require(try await ProbedFile.probe(heicThumb).video)
        #expect(probed.codec_name == "mjpeg" && probed.width == 188 && probed.height == 250)

        // No time at all, a width alone, WebP by the pattern's extension.
        let jpeg = try await Self.jpeg(folder)
        let pattern = folder.appendingPathComponent("train-%d.webp").path
        let json = try await ReelBinary.run(["thumbnail", jpeg.path, "--max-size", "400x", "-o", pattern, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let line = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(line["width"] as? Int == 400 && line["height"] as? Int == 300, "\(line)")
        let webp = try #require(try await ProbedFile.probe(folder.appendingPathComponent("train-1.webp")).video)
        #expect(webp.codec_name == "webp" && webp.width == 400 && webp.height == 300)

        // A photo has one moment.
        let many = try await ReelBinary.run(["thumbnail", jpeg.path, "--count", "3", "-o", folder.path])
        #expect(many.status == 64 && many.stderr.contains("one picture"), "\(many.stderr)")
        let later = try await ReelBinary.run(["thumbnail", jpeg.path, "--at", "5", "-o", folder.path])
        #expect(later.status == 64 && later.stderr.contains("--at 0"), "\(later.stderr)")
    }

    @Test func probeDescribesAPhotoWithTheLibrarysMetadata() async throws {
        let result = try await ReelBinary.run(["probe", try PhoneFiles.heic, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["kind"] as? String == "photo" && report["format"] as? String == "heic")
        #expect(report["displayWidth"] as? Int == 3024 && report["displayHeight"] as? Int == 4032)
        #expect(report["orientation"] as? Int == 1 && report["iccProfile"] as? String == "Display P3")
        #expect(report["make"] as? String == "Apple" && report["model"] as? String == "iPhone 11 Pro")
        #expect(report["contentIdentifier"] as? String == "1745E022-9712-43C7-B024-F308EC6413CB")
        // The capture time in the zone the camera recorded (exiftool: 2020:05:04 18:39:11, -04:00).
        #expect(report["creationDate"] as? String == "2020-05-04T18:39:11-04:00", "\(report)")
        #expect(report["timeZone"] as? String == "-04:00")

        let text = try await ReelBinary.run(["probe", try PhoneFiles.heic])
        #expect(text.status == 0 && text.stdout.contains("3024x4032") && text.stdout.contains("Display P3"))
    }

    @Test func exportOfAPhotoSaysSoAndNamesTheCommandThatRendersIt() async throws {
        let folder = Fixtures.scratchFolder("photo-export")
        let jpeg = try await Self.jpeg(folder, name: "looks-like.mp4")
        for input in [try PhoneFiles.heic, jpeg.path] {
            let output = folder.appendingPathComponent("out.mp4")
            let result = try await ReelBinary.run(["export", input, "--preset", "1280x720", "-o", output.path])
            #expect(result.status == 65, "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains("photo, not a video") && result.stderr.contains("reel thumbnail"))
            #expect(!result.stderr.contains("corrupt") && !result.stderr.contains("image2"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output.path))

            let json = try await ReelBinary.run(["export", input, "--preset", "1280x720", "--json", "-o", output.path])
            let line = try #require(json.stdout.split(separator: "\n").last)
            let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let error = try #require(event["error"] as? [String: Any])
            #expect(error["code"] as? String == "photo-not-video" && error["retryable"] as? Bool == false)
        }
    }

    @Test func aTruncatedPhotoFailsInOneLineAndLeavesNothing() async throws {
        let folder = Fixtures.scratchFolder("photo-cut")
        let whole = try await Self.jpeg(folder)
        let heic = try Data(contentsOf: URL(fileURLWithPath: try PhoneFiles.heic))
        let cutHEIC = folder.appendingPathComponent("cut.heic")
        try heic.prefix(heic.count / 2).write(to: cutHEIC)
        let cutJPEG = folder.appendingPathComponent("cut.jpg")
        try Data(contentsOf: whole).prefix(40_000).write(to: cutJPEG)
        for cut in [cutHEIC, cutJPEG] {
            let output = folder.appendingPathComponent("out-\(cut.lastPathComponent).jpg")
            let result = try await ReelBinary.run(["thumbnail", cut.path, "--max-size", "100x100", "-o", output.path])
            #expect(result.status == 65, "\(cut.lastPathComponent): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.contains(cut.lastPathComponent), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output.path))
        }
    }

    /// exiftool's EXIF and XMP tags of `file` by name (`-a`: else a Composite tag of the same name hides
    /// the EXIF one, GPSLatitude).
    static func tags(_ file: URL) async throws -> [String: String] {
        let result = try await Tools.run("exiftool", ["-a", "-s", "-s", "-n", "-EXIF:all", "-XMP:all", file.path])
        var tags: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { tags[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return tags
    }

    @Test func imageRendersAtASizeLikeRequestImage() async throws {
        let folder = Fixtures.scratchFolder("photo-image")
        let heic = try PhoneFiles.heic
        func image(_ arguments: [String]) async throws -> [String: Any] {
            let result = try await ReelBinary.run(["image", heic] + arguments + ["--json"])
            #expect(result.status == 0 && result.stderr.isEmpty, "\(arguments): \(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }
        let fit = folder.appendingPathComponent("fit.jpg")
        let fitLine = try await image(["--size", "400x400", "-o", fit.path])
        #expect(
            fitLine["width"] as? Int == 300 && fitLine["height"] as? Int == 400 && fitLine["degraded"] as? Bool == false
        )
        let fitted = try #require(try await ProbedFile.probe(fit).video)
        #expect(fitted.width == 300 && fitted.height == 400)
        #expect(try await Self.tags(fit)["Orientation"] == "1")

        let fill = folder.appendingPathComponent("fill.webp")
        _ = try await image(["--size", "400x400", "--content-mode", "fill", "-o", fill.path, "--quality", "80"])
        let filled = try #require(try await ProbedFile.probe(fill).video)
        #expect(filled.codec_name == "webp" && filled.width == 400 && filled.height == 400)

        // max: the whole picture; a size beyond it is not enlarged.
        let whole = folder.appendingPathComponent("whole.png")
        let wholeLine = try await image(["--size", "max", "-o", whole.path, "--metadata", "strip"])
        #expect(wholeLine["width"] as? Int == 3024 && wholeLine["height"] as? Int == 4032)
        let big = folder.appendingPathComponent("big.avif")
        let bigLine = try await image(["--size", "8000x8000", "-o", big.path, "--metadata", "strip"])
        #expect(bigLine["width"] as? Int == 3024 && bigLine["format"] as? String == "avif")
        let header = try await Tools.run("vipsheader", ["-f", "heif-compression", big.path])
        #expect(header.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "av1", "\(header)")

        let exists = try await ReelBinary.run(["image", heic, "--size", "100x100", "-o", fit.path])
        #expect(exists.status == 74, "\(exists.stderr)")
        let bad = try await ReelBinary.run(["image", heic, "--size", "100", "-o", fit.path])
        #expect(bad.status == 64, "\(bad.stderr)")
    }

    /// `reel image library:<id>`: the library's photo resource, a Live or Motion Photo's still; a video
    /// asset has none, refused in one line.
    @Test func imageRendersALibraryPhotoAndAMotionPhotosStill() async throws {
        let folder = Fixtures.scratchFolder("photo-image-library")
        let photos = folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        for (file, name) in [(try PhoneFiles.heic, "IMG_2927.HEIC"), (try PhoneFiles.motionPhoto, "PXL_0001.jpg")] {
            try FileManager.default.copyItem(atPath: file, toPath: photos.appendingPathComponent(name).path)
        }
        try FileManager.default.copyItem(
            atPath: try await Fixtures.url(Fixtures.landscape).path,
            toPath: photos.appendingPathComponent("clip.mov").path)
        let environment = ["REEL_LIBRARY": folder.appendingPathComponent("library.sqlite").path]
        let scan = try await ReelBinary.run(["library", "scan", photos.path], environment: environment)
        #expect(scan.status == 0, "\(scan.stderr)")
        let listed = try await ReelBinary.run(["library", "list", "--json"], environment: environment)
        var ids: [String: String] = [:]
        for line in listed.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            ids[object["originalFilename"] as? String ?? ""] = object["localIdentifier"] as? String
        }
        for name in ["IMG_2927.HEIC", "PXL_0001.jpg"] {
            let id = try #require(ids[name], "\(ids)")
            let out = folder.appendingPathComponent(name + ".jpg")
            let result = try await ReelBinary.run(
                ["image", "library:\(id)", "--size", "250x250", "-o", out.path, "--json"], environment: environment)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            let line = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            #expect(line["localIdentifier"] as? String == id)
            let picture = try #require(try await ProbedFile.probe(out).video)
            #expect(picture.codec_name == "mjpeg", "\(name)")
            #expect(max(picture.width ?? 0, picture.height ?? 0) == 250, "\(name): \(picture)")
        }
        // `reel thumbnail` of a library photo renders the photo (it has one moment, no time needed).
        let thumbs = folder.appendingPathComponent("thumbs")
        let thumbnail = try await ReelBinary.run(
            ["thumbnail", "library:\(try #require(ids["IMG_2927.HEIC"]))", "--max-size", "250x250", "-o", thumbs.path],
            environment: environment)
        #expect(thumbnail.status == 0, "\(thumbnail.stderr)")
        let written = try FileManager.default.contentsOfDirectory(atPath: thumbs.path)
        try #require(written.count == 1, "\(written)")
        let still = try #require(try await ProbedFile.probe(thumbs.appendingPathComponent(written[0])).video)
        #expect(still.width == 188 && still.height == 250, "\(still)")
        let video = try #require(ids["clip.mov"])
        let refused = try await ReelBinary.run(
            ["image", "library:\(video)", "--size", "250x250", "-o", folder.appendingPathComponent("v.jpg").path],
            environment: environment)
        #expect(refused.status == 65 && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
    }

    /// `--crop x,y,w,h` is PhotoKit's normalizedCropRect: unit coordinates of the upright picture. A
    /// JPEG of four coloured quadrants stored sideways (EXIF Orientation 6) is cut in its upright
    /// top-left quarter, which is the stored bottom-left one (blue); ffmpeg reads the pixel back.
    @Test func cropCutsTheUprightPicture() async throws {
        let folder = Fixtures.scratchFolder("photo-crop")
        let photo = folder.appendingPathComponent("quadrants.jpg")
        let colours = ["red", "lime", "blue", "yellow"].flatMap { ["-f", "lavfi", "-i", "color=\($0):s=100x50"] }
        try await Tools.ffmpeg(
            colours + [
                "-filter_complex", "[0][1]hstack[top];[2][3]hstack[bottom];[top][bottom]vstack", "-frames:v", "1",
                "-q:v", "2", photo.path,
            ])
        let rotated = try await Tools.run(
            "exiftool", ["-q", "-overwrite_original", "-n", "-Orientation=6", photo.path])
        try #require(rotated.status == 0, "\(rotated.stderr)")
        let out = folder.appendingPathComponent("corner.png")
        let result = try await ReelBinary.run([
            "image", photo.path, "--size", "max", "--crop", "0,0,0.5,0.5", "-o", out.path, "--json",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        // Upright the picture is 100x200; its top-left quarter is 50x100.
        #expect(line["width"] as? Int == 50 && line["height"] as? Int == 100, "\(line)")
        let raw = folder.appendingPathComponent("corner.rgb")
        try await Tools.ffmpeg([
            "-y", "-v", "error", "-i", out.path, "-vf", "crop=10:10:20:45", "-frames:v", "1", "-f", "rawvideo",
            "-pix_fmt", "rgb24", raw.path,
        ])
        let bytes = [UInt8](try Data(contentsOf: raw))
        let mean = [0, 1, 2].map { channel in
            stride(from: channel, to: bytes.count, by: 3).map { Int(bytes[$0]) }.reduce(0, +) / max(1, bytes.count / 3)
        }
        // Pure blue stays pure: a photo without an ICC profile is sRGB and is not converted (an sRGB to
        // sRGB pass through lcms gave 84,15,253).
        #expect(mean[2] > 240 && mean[0] < 16 && mean[1] < 16, "blue expected, got \(mean)")
        let refused = try await ReelBinary.run([
            "image", photo.path, "--size", "max", "--crop", "0.5,0,0.75,1", "-o",
            folder.appendingPathComponent("x.png").path,
        ])
        #expect(refused.status == 64 && refused.stderr.contains("--crop"), "\(refused.stderr)")
    }

    @Test func sharingDropsLocationDeviceAndTheContentIdentifier() async throws {
        let folder = Fixtures.scratchFolder("photo-sharing")
        let jpeg = try await Self.jpeg(folder, name: "located.jpg")
        let tagged = try await Tools.run(
            "exiftool",
            [
                "-q", "-overwrite_original", "-Make=Pixel", "-Model=Pixel 8", "-GPSLatitude=48.8584",
                "-GPSLatitudeRef=N", "-GPSLongitude=2.2945", "-GPSLongitudeRef=E",
                "-DateTimeOriginal=2024:06:01 12:00:00", "-XMP-dc:Title=Tower", jpeg.path,
            ])
        #expect(tagged.status == 0, "\(tagged.stderr)")
        var outputs: [String: [String: String]] = [:]
        for policy in ["keep", "sharing", "strip"] {
            let output = folder.appendingPathComponent("\(policy).jpg")
            let result = try await ReelBinary.run([
                "image", jpeg.path, "--size", "320x320", "--metadata", policy, "-o", output.path,
            ])
            #expect(result.status == 0, "\(policy): \(result.stderr)")
            outputs[policy] = try await Self.tags(output)
        }
        let keep = try #require(outputs["keep"])
        #expect(keep["Make"] == "Pixel" && keep["Model"] == "Pixel 8" && keep["GPSLatitude"] != nil, "\(keep)")
        let sharing = try #require(outputs["sharing"])
        #expect(sharing["Make"] == nil && sharing["Model"] == nil, "\(sharing)")
        #expect(sharing.keys.allSatisfy { !$0.hasPrefix("GPS") }, "\(sharing)")
        #expect(sharing["Title"] == nil, "\(sharing)")
        #expect(sharing["DateTimeOriginal"] == "2024:06:01 12:00:00" && sharing["Orientation"] == "1", "\(sharing)")
        let strip = try #require(outputs["strip"])
        #expect(strip["Make"] == nil && strip["DateTimeOriginal"] == nil && strip["GPSLatitude"] == nil, "\(strip)")

        // The iPhone's content identifier (Apple's maker note) and device go; the capture date stays.
        let shared = folder.appendingPathComponent("iphone-sharing.jpg")
        let result = try await ReelBinary.run([
            "image", try PhoneFiles.heic, "--size", "320x320", "--metadata", "sharing", "-o", shared.path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let identifier = try await Tools.run("exiftool", ["-s3", "-ContentIdentifier", "-Make", shared.path])
        #expect(identifier.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(identifier.stdout)")
        #expect(try await Self.tags(shared)["DateTimeOriginal"] == "2020:05:04 18:39:11")
    }
}
