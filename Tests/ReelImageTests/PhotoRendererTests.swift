import Foundation
import ReelImage
import ReelMedia
import TestSupport
import Testing

/// ReelImage against tools that are not Reel: every EXIF orientation comes out upright (pixels read
/// back by ffmpeg), HEIC, AVIF, WebP, GIF and PNG made by heif-enc and ffmpeg are read, sizes as
/// ffprobe and vipsheader say, the iPhone HEIC as vips renders it (PSNR), damaged photos fail in one
/// line with their code.
@Suite("Photos (ReelImage)", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PhotoRendererTests {
    /// A 160x120 picture no transform leaves unchanged: red top-left, green top-right, blue
    /// bottom-left, white bottom-right.
    static func quadrants(_ folder: URL) async throws -> URL {
        let reference = folder.appendingPathComponent("reference.png")
        try await Tools.ffmpeg([
            "-f", "lavfi", "-i",
            "color=white:s=160x120,drawbox=x=0:y=0:w=80:h=60:color=red:t=fill,drawbox=x=80:y=0:w=80:h=60:color=lime:t=fill,drawbox=x=0:y=60:w=80:h=60:color=blue:t=fill",
            "-frames:v", "1", reference.path,
        ])
        return reference
    }

    /// The colour names of the four quadrants' centres of a decoded picture, read by ffmpeg.
    static func corners(_ url: URL) async throws -> [String] {
        let frame = try await Pictures.firstFrame(url, pixelFormat: "rgb24")
        func name(_ x: Int, _ y: Int) -> String {
            let at = (y * frame.width + x) * 3
            let (r, g, b) = (frame.bytes[at], frame.bytes[at + 1], frame.bytes[at + 2])
            switch (r > 200, g > 200, b > 200) {
            case (true, false, false): return "red"
            case (false, true, false): return "green"
            case (false, false, true): return "blue"
            case (true, true, true): return "white"
            default: return "(\(r),\(g),\(b))"
            }
        }
        let (w, h) = (frame.width, frame.height)
        return [name(w / 4, h / 4), name(3 * w / 4, h / 4), name(w / 4, 3 * h / 4), name(3 * w / 4, 3 * h / 4)]
    }

    static let upright = ["red", "green", "blue", "white"]

    /// What ffmpeg does to the upright picture to store it so that EXIF orientation `n` shows it upright.
    static let storedBy: [Int: String] = [
        1: "null", 2: "hflip", 3: "hflip,vflip", 4: "vflip", 5: "transpose=0", 6: "transpose=2", 7: "transpose=3",
        8: "transpose=1",
    ]

    static func write(_ rendered: RenderedPhoto, _ folder: URL, _ name: String) throws -> URL {
        let url = folder.appendingPathComponent("\(name).\(rendered.format.fileExtension)")
        try rendered.data.write(to: url)
        return url
    }

    @Test(arguments: 1...8) func everyExifOrientationComesOutUpright(orientation: Int) async throws {
        let folder = Fixtures.scratchFolder("orientation-\(orientation)")
        let reference = try await Self.quadrants(folder)
        let stored = folder.appendingPathComponent("stored.jpg")
        try await Tools.ffmpeg(["-i", reference.path, "-vf", Self.storedBy[orientation]!, "-q:v", "2", stored.path])
        let tagged = try await Tools.run(
            "exiftool", ["-q", "-overwrite_original", "-Orientation#=\(orientation)", stored.path])
        #expect(tagged.status == 0, "\(tagged.stderr)")

        let info = try PhotoRenderer.info(stored.path)
        #expect(info.format == .jpeg && info.orientation == orientation)
        #expect(info.width == 160 && info.height == 120, "displayed \(info.width)x\(info.height)")

        // Shrunk to 80 wide, upright, with the EXIF block kept: its Orientation says 1.
        let rendered = try PhotoRenderer.render(
            stored.path, PhotoRenderOptions(maxWidth: 80, maxHeight: 80, format: .jpeg, metadata: .keep))
        let output = try Self.write(rendered, folder, "upright")
        #expect(rendered.width == 80 && rendered.height == 60)
        let probed = try #require(try await ProbedFile.probe(output).video)
        #expect(probed.width == 80 && probed.height == 60)
        #expect(try await Self.corners(output) == Self.upright, "orientation \(orientation)")
        let written = try await Tools.run("exiftool", ["-s3", "-n", "-Orientation", output.path])
        #expect(written.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(written.stdout)")
    }

    /// HEIF transforms, each with what ffmpeg does to the upright picture to store it: `irot` turns
    /// the stored picture anticlockwise by 90° steps for display; `imir` mirrors it, axis 0 top to
    /// bottom and axis 1 left to right as libheif 1.15 reads the axis.
    static let heifTransforms: [(box: String, value: UInt8, storedBy: String)] = [
        ("irot", 1, "transpose=1"), ("irot", 2, "hflip,vflip"), ("irot", 3, "transpose=2"), ("imir", 0, "vflip"),
        ("imir", 1, "hflip"),
    ]

    @Test(arguments: 0..<5) func heifRotationsAndMirrorsComeOutUpright(index: Int) async throws {
        let (box, value, storedBy) = Self.heifTransforms[index]
        let folder = Fixtures.scratchFolder("\(box)-\(value)")
        let reference = try await Self.quadrants(folder)
        let stored = folder.appendingPathComponent("stored.png")
        try await Tools.ffmpeg(["-i", reference.path, "-vf", storedBy, stored.path])
        let plain = folder.appendingPathComponent("plain.heic")
        let made = try await Tools.run("heif-enc", ["-q", "90", stored.path, "-o", plain.path])
        #expect(made.status == 0, "\(made.stderr)")
        // heif-enc writes no transform; its `pixi` property (16 bytes, associated with the primary
        // item) is overwritten by the transform's box of the same size (the value, then padding), so
        // no offset in the file moves.
        var bytes = [UInt8](try Data(contentsOf: plain))
        let name = Array("pixi".utf8)
        let at = try #require((4..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == name }) - 4
        #expect(bytes[at..<at + 4].elementsEqual([0, 0, 0, 16]))
        bytes.replaceSubrange(
            at..<at + 16, with: [0, 0, 0, 16] + Array(box.utf8) + [value] + [UInt8](repeating: 0, count: 7))
        let heic = folder.appendingPathComponent("\(box)\(value).heic")
        try Data(bytes).write(to: heic)

        let info = try PhotoRenderer.info(heic.path)
        #expect(info.width == 160 && info.height == 120 && info.orientation == 1, "\(box) \(value): \(info)")
        let rendered = try PhotoRenderer.render(
            heic.path, PhotoRenderOptions(maxWidth: 160, maxHeight: 160, format: .png))
        let output = try Self.write(rendered, folder, "upright")
        #expect(try await Self.corners(output) == Self.upright, "\(box) \(value)")
    }

    @Test func heicAvifWebpGifAndPngMadeByOtherToolsAreRead() async throws {
        let folder = Fixtures.scratchFolder("formats")
        let reference = try await Self.quadrants(folder)
        let heic = folder.appendingPathComponent("made.heic")
        let avif = folder.appendingPathComponent("made.avif")
        let webp = folder.appendingPathComponent("made.webp")
        let gif = folder.appendingPathComponent("made.gif")
        // The HEIC with an embedded 64x48 thumbnail (heif-enc -t), which libheif counts.
        for (file, arguments) in [(heic, ["-q", "90", "-t", "64"]), (avif, ["-A", "-q", "90"])] {
            let made = try await Tools.run("heif-enc", arguments + [reference.path, "-o", file.path])
            #expect(made.status == 0, "\(made.stderr)")
        }
        let madeWebP = try await Tools.run("vips", ["copy", reference.path, webp.path + "[Q=95]"])
        #expect(madeWebP.status == 0, "\(madeWebP.stderr)")
        try await Tools.ffmpeg(["-i", reference.path, "-frames:v", "1", gif.path])
        let expected: [(URL, PhotoFormat)] = [
            (heic, .heic), (avif, .avif), (webp, .webp), (gif, .gif), (reference, .png),
        ]
        for (file, format) in expected {
            let head = [UInt8](try Data(contentsOf: file).prefix(1 << 20))
            #expect(PhotoSignature.detect(head) != nil, "\(file.lastPathComponent) is not recognised as a photo")
            let info = try PhotoRenderer.info(file.path)
            #expect(info.format == format && info.width == 160 && info.height == 120, "\(file.lastPathComponent)")
            if format == .heic { #expect(info.embeddedThumbnails == 1 && info.hasDepth == false, "\(info)") }
            for output in [ImageOutputFormat.png, .webp, .avif] {
                let rendered = try PhotoRenderer.render(
                    file.path, PhotoRenderOptions(maxWidth: 100, maxHeight: 100, format: output))
                let written = try Self.write(rendered, folder, "\(format.rawValue)-as")
                #expect(rendered.width == 100 && rendered.height == 75, "\(format) as \(output)")
                // vipsheader reads what was written (ffmpeg 5.1 has no AVIF-in-HEIF demuxer).
                let header = try await Tools.run("vipsheader", [written.path])
                #expect(header.stdout.contains("100x75"), "\(format) as \(output): \(header.stdout)")
                if output != .avif {
                    #expect(try await Self.corners(written) == Self.upright, "\(format) as \(output)")
                }
            }
        }
    }

    /// `colour: .displayP3` keeps an iPhone photo's Display P3 (its pixels as vips converts them to its
    /// built-in P3 profile), converts an untagged (sRGB) photo into it, and keeps the profile with the
    /// metadata stripped, where the sRGB default writes none. Profiles read by exiftool.
    @Test func displayP3KeepsTheWideGamutWithItsProfile() async throws {
        let folder = Fixtures.scratchFolder("p3")
        func profile(_ url: URL) async throws -> String {
            let read = try await Tools.run("exiftool", ["-s3", "-ICC_Profile:ProfileDescription", url.path])
            return read.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // The tags of the file's EXIF, XMP and IPTC blocks but the structural ones libvips writes into
        // any EXIF block it makes (size, resolution, versions, Orientation 1).
        let structural: Set = [
            "Orientation", "XResolution", "YResolution", "ResolutionUnit", "YCbCrPositioning", "ExifVersion",
            "ComponentsConfiguration", "FlashpixVersion", "ColorSpace", "ExifImageWidth", "ExifImageHeight",
        ]
        func exif(_ url: URL) async throws -> [String] {
            let read = try await Tools.run("exiftool", ["-s", "-EXIF:All", "-XMP:All", "-IPTC:All", url.path])
            return read.stdout.split(separator: "\n").compactMap { line in
                let tag = line.split(separator: ":").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                return structural.contains(tag) ? nil : String(line)
            }
        }
        var options = PhotoRenderOptions(maxWidth: 250, maxHeight: 250, format: .png)
        options.colour = .displayP3
        let heic = try PhoneFiles.heic
        let wide = try Self.write(try PhotoRenderer.render(heic, options), folder, "iphone-p3")
        let reference = folder.appendingPathComponent("iphone-vips-p3.png")
        let made = try await Tools.run(
            "vips", ["thumbnail", heic, reference.path, "250", "--height", "250", "--export-profile", "p3"])
        #expect(made.status == 0, "\(made.stderr)")
        let psnr = try await Pictures.psnr(wide, against: reference)
        #expect(psnr.average >= 40, "\(psnr)")
        let p3Name = try await profile(reference)
        let wideName = try await profile(wide)
        #expect(!p3Name.isEmpty && wideName == p3Name, "\(wideName) against vips's \(p3Name)")

        // An untagged picture is sRGB: converted into P3 as vips converts it from sRGB.
        let untagged = try await Self.quadrants(folder)
        let converted = try Self.write(try PhotoRenderer.render(untagged.path, options), folder, "untagged-p3")
        let convertedReference = folder.appendingPathComponent("untagged-vips-p3.png")
        let made2 = try await Tools.run(
            "vips",
            [
                "thumbnail", untagged.path, convertedReference.path, "250", "--height", "250", "--size", "down",
                "--import-profile", "srgb", "--export-profile", "p3",
            ])
        #expect(made2.status == 0, "\(made2.stderr)")
        let convertedPSNR = try await Pictures.psnr(converted, against: convertedReference)
        #expect(convertedPSNR.average >= 40, "\(convertedPSNR)")
        let convertedName = try await profile(converted)
        #expect(convertedName == p3Name)

        // Stripped metadata keeps the profile a P3 picture needs, and nothing else; sRGB writes none.
        options.format = .jpeg
        options.metadata = .strip
        let stripped = try Self.write(try PhotoRenderer.render(heic, options), folder, "stripped-p3")
        let strippedName = try await profile(stripped)
        let strippedEXIF = try await exif(stripped)
        #expect(strippedName == p3Name)
        #expect(strippedEXIF.isEmpty, "\(strippedEXIF)")
        options.colour = .sRGB
        let plain = try Self.write(try PhotoRenderer.render(heic, options), folder, "stripped-srgb")
        let plainName = try await profile(plain)
        #expect(plainName.isEmpty, "\(plainName)")
    }

    @Test func theIPhoneHEICIsReadAsVipsRendersIt() async throws {
        let heic = try PhoneFiles.heic
        let info = try PhotoRenderer.info(heic)
        #expect(info.format == .heic && info.width == 3024 && info.height == 4032 && info.orientation == 1)
        #expect(info.iccProfile == "Display P3" && info.colourSpace == "srgb" && info.bitDepth == 8)
        #expect(!info.hasAlpha && info.colourName == "Display P3")
        // libheif's reading (heif-info: "color profile: prof", no depth channel; an iPhone 11 has no gain map).
        #expect(info.nclx == nil && info.hasDepth == false && info.hasGainMap == false, "\(info)")

        let folder = Fixtures.scratchFolder("iphone")
        let rendered = try PhotoRenderer.render(heic, PhotoRenderOptions(maxWidth: 250, maxHeight: 250, format: .png))
        let output = try Self.write(rendered, folder, "thumb")
        #expect(rendered.width == 188 && rendered.height == 250)
        let reference = folder.appendingPathComponent("vips.png")
        let made = try await Tools.run(
            "vips", ["thumbnail", heic, reference.path, "250", "--height", "250", "--export-profile", "srgb"])
        #expect(made.status == 0, "\(made.stderr)")
        let psnr = try await Pictures.psnr(output, against: reference)
        #expect(psnr.average >= 40, "\(psnr)")

        // Fill: the box covered and the centre kept.
        let filled = try PhotoRenderer.render(
            heic, PhotoRenderOptions(maxWidth: 200, maxHeight: 100, fill: true, format: .jpeg))
        let filledURL = try Self.write(filled, folder, "filled")
        let probed = try #require(try await ProbedFile.probe(filledURL).video)
        #expect(probed.width == 200 && probed.height == 100)
    }

    @Test func damagedAndForeignFilesFailInOneLineWithTheirCode() async throws {
        let folder = Fixtures.scratchFolder("damaged")
        let reference = try await Self.quadrants(folder)
        let jpeg = folder.appendingPathComponent("whole.jpg")
        try await Tools.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=s=1280x720", "-frames:v", "1", "-q:v", "2", jpeg.path,
        ])
        let heic = folder.appendingPathComponent("whole.heic")
        let made = try await Tools.run("heif-enc", ["-q", "80", reference.path, "-o", heic.path])
        #expect(made.status == 0, "\(made.stderr)")
        for whole in [jpeg, heic, try URL(fileURLWithPath: PhoneFiles.heic)] {
            let bytes = try Data(contentsOf: whole)
            let cut = folder.appendingPathComponent("cut-" + whole.lastPathComponent)
            try bytes.prefix(bytes.count / 2).write(to: cut)
            do {
                _ = try PhotoRenderer.render(cut.path, PhotoRenderOptions(maxWidth: 64, maxHeight: 64))
                Issue.record("\(cut.lastPathComponent) rendered")
            } catch {
                #expect(error.code == .unreadable, "\(error.code): \(error.message)")
                #expect(!error.message.contains("\n") && error.message.hasPrefix(cut.lastPathComponent), "\(error)")
            }
        }
        let text = folder.appendingPathComponent("notes.jpg")
        try Data("not a photo at all\n".utf8).write(to: text)
        #expect(throws: PhotoError.self) { try PhotoRenderer.info(text.path) }
        do {
            _ = try PhotoRenderer.info(text.path)
        } catch {
            #expect(error.code == .unreadable && !error.message.contains("\n"), "\(error)")
        }
        // Over the pixel limit: refused before any decoding.
        do {
            _ = try PhotoRenderer.render(jpeg.path, PhotoRenderOptions(maxWidth: 64), maxPixels: 100_000)
            Issue.record("rendered over the limit")
        } catch {
            #expect(error.code == .limitExceeded, "\(error)")
        }
    }

    @Test func rendersRunConcurrently() async throws {
        let heic = try PhoneFiles.heic
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for width in [64, 96, 128, 160] {
                group.addTask {
                    try await PhotoRenderer.rendering(heic, PhotoRenderOptions(maxWidth: width, maxHeight: width)).width
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }.sorted()
        }
        #expect(sizes == [48, 72, 96, 120])
    }

    @Test func photoSignaturesAreReadFromBytesNotNames() {
        #expect(PhotoSignature.detect([0xFF, 0xD8, 0xFF, 0xE1]) == .jpeg)
        #expect(PhotoSignature.detect(Array("\u{0}\u{0}\u{0}\u{18}ftypheic\u{0}\u{0}\u{0}\u{0}".utf8)) == .heif)
        #expect(PhotoSignature.detect(Array("\u{0}\u{0}\u{0}\u{18}ftypavif\u{0}\u{0}\u{0}\u{0}".utf8)) == .avif)
        #expect(PhotoSignature.detect(Array("\u{0}\u{0}\u{0}\u{18}ftypqt  \u{0}\u{0}\u{0}\u{0}".utf8)) == nil)
        #expect(PhotoSignature.detect(Array("\u{0}\u{0}\u{0}\u{18}ftypisom\u{0}\u{0}\u{0}\u{0}".utf8)) == nil)
        #expect(PhotoSignature.detect(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        #expect(PhotoSignature.detect(Array("RIFF\u{0}\u{0}\u{0}\u{0}AVI LIST".utf8)) == nil)
        // GIF: one picture is a photo, two are an animation.
        let header: [UInt8] = Array("GIF89a".utf8) + [2, 0, 2, 0, 0, 0, 0]
        let picture: [UInt8] = [0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0, 2, 2, 0x44, 0x01, 0]
        #expect(PhotoSignature.detect(header + picture + [0x3B]) == .gif)
        #expect(PhotoSignature.detect(header + picture + picture + [0x3B]) == nil)
    }
}
