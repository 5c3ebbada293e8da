import Foundation
import TestSupport
import Testing

/// `reel library cache` (PhotoKit's `startCachingImages`) over a scanned folder, and `reel image
/// library:<id> --resize fast` served from what it made: tiers' sizes and codecs by ffprobe, the served
/// bytes against the cached file, a damaged photo recorded and reported without stopping the rest, a
/// run killed with SIGKILL resumed without duplicates or leftovers, and `--stop` ending a run.
@Suite("Library cache", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PhotoCacheTests {
    /// A library of `count` distinct 2000x1500 JPEGs (the last truncated when `damaged`), a 1200x1600 HEIC
    /// when `heic`, and a 640x360 clip when `clip`.
    static func library(_ name: String, count: Int, damaged: Bool = false, heic: Bool = false, clip: Bool = true)
        async throws -> (
            folder: URL, environment: [String: String]
        )
    {
        let folder = Fixtures.scratchFolder(name)
        let photos = folder.appendingPathComponent("photos")
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        for index in 0..<count {
            let url = photos.appendingPathComponent(String(format: "IMG_%04d.jpg", index))
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=s=2000x1500", "-vf", "hue=h=\(index * 25)", "-frames:v", "1", "-q:v",
                "3",
                url.path,
            ])
        }
        if heic {
            let png = folder.appendingPathComponent("source.png")
            try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=1200x1600", "-frames:v", "1", png.path])
            let made = try await Tools.run(
                "heif-enc", ["-q", "70", "-o", photos.appendingPathComponent("IMG_9000.HEIC").path, png.path])
            try #require(made.status == 0, "\(made.stderr)")
        }
        if damaged {
            let url = photos.appendingPathComponent(String(format: "IMG_%04d.jpg", count - 1))
            let whole = try Data(contentsOf: url)
            try whole.prefix(whole.count / 2).write(to: url)
        }
        if clip {
            try FileManager.default.copyItem(
                atPath: try await Fixtures.url(Fixtures.landscape).path,
                toPath: photos.appendingPathComponent("clip.mov").path)
        }
        let environment = ["REEL_LIBRARY": folder.appendingPathComponent("library.sqlite").path]
        let scan = try await ReelBinary.run(["library", "scan", photos.path], environment: environment)
        try #require(scan.status == 0, "\(scan.stderr)")
        return (folder, environment)
    }

    static func jsonLines(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    /// The store's files (relative paths), temporaries included.
    static func storeFiles(_ folder: URL) -> [String] {
        let store = folder.appendingPathComponent("library.derivatives").path
        return (FileManager.default.enumerator(atPath: store)?.compactMap { $0 as? String } ?? [])
            .filter { !$0.hasSuffix("/") && $0.split(separator: "/").count == 3 }.sorted()
    }

    @Test func eachPhotoIsCachedOnceAndServedFastWithoutDecoding() async throws {
        let (folder, environment) = try await Self.library("cache-serve", count: 3, damaged: true, heic: true)
        let run = try await ReelBinary.run(["library", "cache", "--json"], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try Self.jsonLines(run.stdout)
        let photos = lines.filter { $0["localIdentifier"] != nil }
        let totals = try #require(lines.last)
        // Three JPEGs (one damaged), the HEIC and the clip (its first frame).
        #expect(totals["total"] as? Int == 5 && totals["made"] as? Int == 4 && totals["failed"] as? Int == 1)
        #expect(totals["skipped"] as? Int == 0, "\(totals)")
        #expect(photos.count == 5 && photos.map { $0["done"] as? Int ?? 0 } == [1, 2, 3, 4, 5])
        let failed = try #require(photos.first { $0["outcome"] as? String == "failed" })
        #expect((failed["reason"] as? String)?.contains("IMG_0002.jpg") == true, "\(failed)")
        #expect(
            photos.filter { $0["outcome"] as? String == "made" }.allSatisfy {
                ($0["thumbHash"] as? String)?.count ?? 0 >= 20
            })

        // One thumbnail, one preview and one ThumbHash per decodable photo or video, and a failure record.
        let files = Self.storeFiles(folder)
        #expect(files.filter { $0.hasPrefix("thumbnail/") && $0.hasSuffix(".webp") }.count == 4, "\(files)")
        #expect(files.filter { $0.hasPrefix("preview/") && $0.hasSuffix(".jpg") }.count == 4, "\(files)")
        #expect(
            files.filter { $0.hasPrefix("thumbhash/") }.count == 4
                && files.filter { $0.hasPrefix("failed/") }.count == 1)
        #expect(!files.contains { $0.hasSuffix(".partial") })
        let store = folder.appendingPathComponent("library.derivatives")
        for file in files where file.hasPrefix("preview/") || file.hasPrefix("thumbnail/") {
            let probed = try #require(try await ProbedFile.probe(store.appendingPathComponent(file)).video)
            let short = min(probed.width ?? 0, probed.height ?? 0)
            // Previews: 1440 px short edge, or the HEIC's own 1200 and the clip's 360 (never enlarged);
            // thumbnails: 250 px.
            let expected = file.hasPrefix("preview/") ? [1440, 1200, 360] : [250]
            #expect(expected.contains(short), "\(file): \(probed.width ?? 0)x\(probed.height ?? 0)")
        }

        // Again: every photo is cached (the damaged one reported from its record), nothing is made.
        let again = try await ReelBinary.run(["library", "cache", "--json"], environment: environment)
        let againTotals = try #require(try Self.jsonLines(again.stdout).last)
        #expect(
            againTotals["made"] as? Int == 0 && againTotals["cached"] as? Int == 4 && againTotals["failed"] as? Int == 1
        )
        #expect(Self.storeFiles(folder) == files)

        // The clip's tiers are its first frame, as ffmpeg decodes it.
        let listed = try await ReelBinary.run(["library", "list", "--json"], environment: environment)
        let clip = try #require(
            try Self.jsonLines(listed.stdout).first { $0["originalFilename"] as? String == "clip.mov" })
        let clipID = try #require(clip["localIdentifier"] as? String)
        let clipPreview = try #require(files.first { $0.hasPrefix("preview/") && $0.contains(clipID.prefix(8)) })
        let firstFrame = folder.appendingPathComponent("clip-first-frame.png")
        try await Tools.ffmpeg([
            "-i", folder.appendingPathComponent("photos/clip.mov").path, "-frames:v", "1", firstFrame.path,
        ])
        let clipPSNR = try await Pictures.psnr(store.appendingPathComponent(clipPreview), against: firstFrame)
        #expect(clipPSNR.average >= 30, "\(clipPSNR)")

        // Fast requests of a library photo: the smallest tier that covers the size, as it is.
        let heic = try #require(
            try Self.jsonLines(listed.stdout).first { $0["originalFilename"] as? String == "IMG_9000.HEIC" })
        let id = try #require(heic["localIdentifier"] as? String)
        func image(_ size: String, _ name: String, _ extra: [String] = []) async throws -> [String: Any] {
            let result = try await ReelBinary.run(
                [
                    "image", "library:\(id)", "--size", size, "--resize", "fast", "--json", "-o",
                    folder.appendingPathComponent(name).path,
                ] + extra, environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try Self.jsonLines(result.stdout).last)
        }
        // 1200x1600: a 200x200 fit is 150x200, which the 250x333 thumbnail covers.
        let small = try await image("200x200", "small.webp", ["--metadata", "strip"])
        #expect(small["source"] as? String == "cached-tier" && small["width"] as? Int == 250, "\(small)")
        let thumbnail = try #require(files.first { $0.hasPrefix("thumbnail/") && $0.contains(id.prefix(8)) })
        #expect(
            try Data(contentsOf: folder.appendingPathComponent("small.webp"))
                == Data(contentsOf: store.appendingPathComponent(thumbnail)))
        // Another format: the tier's own pixels encoded again (the photo is not decoded): the PNG holds
        // what vips decodes from the cached WebP.
        let png = try await image("200x200", "small.png", ["--metadata", "strip"])
        #expect(png["source"] as? String == "cached-tier" && png["height"] as? Int == 333)
        let decoded = folder.appendingPathComponent("tier-decoded.png")
        let copied = try await Tools.run(
            "vips", ["copy", store.appendingPathComponent(thumbnail).path, decoded.path])
        try #require(copied.status == 0, "\(copied.stderr)")
        let psnr = try await Pictures.psnr(folder.appendingPathComponent("small.png"), against: decoded)
        #expect(psnr.average == .infinity, "\(psnr)")
        // Larger than the thumbnail: the preview (the photo's own size here: its short edge is 1200).
        let large = try await image("1000x1000", "large.jpg", ["--metadata", "strip"])
        #expect(large["source"] as? String == "cached-tier" && large["width"] as? Int == 1200, "\(large)")
        // A request for the photo's metadata is not a tier's: decoded as before.
        let kept = try await image("200x200", "kept.jpg", ["--metadata", "keep"])
        #expect(kept["source"] as? String == "picture" && kept["width"] as? Int == 150, "\(kept)")

        // The change log: a photo deleted and the folder rescanned, its tiers (thumbnail, preview, ThumbHash
        // and size) go with the next run.
        let gone = try #require(
            try Self.jsonLines(listed.stdout).first { $0["originalFilename"] as? String == "IMG_0000.jpg" })
        let goneID = try #require(gone["localIdentifier"] as? String)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("photos/IMG_0000.jpg"))
        let rescan = try await ReelBinary.run(
            ["library", "scan", folder.appendingPathComponent("photos").path], environment: environment)
        #expect(rescan.status == 0, "\(rescan.stderr)")
        let pruned = try await ReelBinary.run(["library", "cache", "--json"], environment: environment)
        let prunedTotals = try #require(try Self.jsonLines(pruned.stdout).last)
        #expect(prunedTotals["invalidated"] as? Int == 4 && prunedTotals["total"] as? Int == 4, "\(prunedTotals)")
        #expect(!Self.storeFiles(folder).contains { $0.contains(goneID.prefix(8)) }, "\(Self.storeFiles(folder))")

        // An edit (PhotoKit's content editing output): the HEIC's tiers are made again from the red edit,
        // which fast requests then get; the original is not the cache's and is decoded.
        let red = folder.appendingPathComponent("edited.jpg")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "color=red:s=900x1200", "-frames:v", "1", red.path])
        let data = folder.appendingPathComponent("adjustments.bin")
        try Data("crop".utf8).write(to: data)
        let edit = try await ReelBinary.run(
            [
                "library", "edit", id, "--rendered", red.path, "--adjustment-data", data.path, "--format-identifier",
                "com.example.crop", "--format-version", "1.0",
            ], environment: environment)
        #expect(edit.status == 0, "\(edit.stderr)")
        let recached = try await ReelBinary.run(["library", "cache", "--json"], environment: environment)
        let heicLine = try #require(
            try Self.jsonLines(recached.stdout).first { $0["localIdentifier"] as? String == id })
        #expect(heicLine["outcome"] as? String == "made", "\(heicLine)")
        let edited = try await image("200x200", "edited.webp", ["--metadata", "strip"])
        #expect(edited["source"] as? String == "cached-tier" && edited["width"] as? Int == 250, "\(edited)")
        #expect(edited["height"] as? Int == 333, "the edit's own size (900x1200): \(edited)")
        let frame = try await Pictures.firstFrame(folder.appendingPathComponent("edited.webp"), pixelFormat: "rgb24")
        #expect(frame.bytes[0] > 200 && frame.bytes[1] < 60 && frame.bytes[2] < 60, "\(frame.bytes.prefix(3))")
        let original = try await image("200x200", "original.webp", ["--metadata", "strip", "--version", "original"])
        #expect(original["source"] as? String == "picture", "\(original)")
        #expect(Self.storeFiles(folder).filter { $0.hasPrefix("preview/") && $0.contains(id.prefix(8)) }.count == 1)
    }

    @Test func aRunKilledMidwayResumesWithoutDuplicates() async throws {
        let (folder, environment) = try await Self.library("cache-kill", count: 10, clip: false)
        let run = try ReelBinary.start(["library", "cache", "--jobs", "1"], environment: environment)
        let started = await eventually(within: .seconds(120)) {
            Self.storeFiles(folder).contains { $0.hasPrefix("preview/") } ? true : nil
        }
        #expect(started == true, "\(run.output)")
        run.signal(SIGKILL)
        try await run.exit()
        let before = Self.storeFiles(folder).filter { !$0.hasSuffix(".partial") }
        #expect(before.filter { $0.hasPrefix("preview/") }.count < 10, "the run ended before it was killed")

        let again = try await ReelBinary.run(["library", "cache", "--json"], environment: environment)
        #expect(again.status == 0, "\(again.stderr)")
        let totals = try #require(try Self.jsonLines(again.stdout).last)
        #expect(totals["failed"] as? Int == 0 && totals["total"] as? Int == 10)
        #expect((totals["made"] as? Int ?? 0) + (totals["cached"] as? Int ?? 0) == 10)
        let files = Self.storeFiles(folder)
        for kind in ["thumbnail/", "preview/", "thumbhash/"] {
            #expect(files.filter { $0.hasPrefix(kind) }.count == 10, "\(kind): \(files)")
        }
        #expect(!files.contains { $0.hasSuffix(".partial") || $0.contains(".reel-") }, "\(files)")
    }

    @Test func stopEndsTheRunsOnTheStore() async throws {
        let (folder, environment) = try await Self.library("cache-stop", count: 30, clip: false)
        let run = try ReelBinary.start(["library", "cache", "--jobs", "1"], environment: environment)
        let started = await eventually(within: .seconds(120)) {
            Self.storeFiles(folder).contains { $0.hasPrefix("preview/") } ? true : nil
        }
        #expect(started == true, "\(run.output)")
        let stop = try await ReelBinary.run(["library", "cache", "--stop"], environment: environment)
        #expect(stop.status == 0 && stop.stdout.contains("asked the caching runs"), "\(stop.stderr)")
        let ended = try await run.exit(within: .seconds(60))
        #expect(ended.status == 130, "\(run.output)")
        #expect(run.output.contains("photos not cached yet"), "\(run.output)")
        #expect(Self.storeFiles(folder).filter { $0.hasPrefix("preview/") }.count < 30)
        // A run started after the request is not stopped by it.
        let after = try await ReelBinary.run(["library", "cache"], environment: environment)
        #expect(after.status == 0, "\(after.stderr)")
        #expect(Self.storeFiles(folder).filter { $0.hasPrefix("preview/") }.count == 30)
    }
}
