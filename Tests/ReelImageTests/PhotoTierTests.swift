import Foundation
import ReelExport
import ReelImage
import Synchronization
import TestSupport
import Testing

/// A photo's tiers from one decode (`PhotoRenderer.renderTiers`), its ThumbHash, and the derivative
/// store a `CachingImageManager` fills, checked with tools that are not Reel: sizes and codecs by
/// ffprobe, pixels against vips's own render of the whole photo (ffmpeg's SSIM), the ThumbHash against
/// the reference encoder's bytes and the picture's mean colour as ffmpeg decodes it.
@Suite("Photo tiers and the derivative store", .tags(.process, .media), .timeLimit(.minutes(10)))
struct PhotoTierTests {
    /// The pattern the reference vectors were made from: red across, green down, blue a ramp, opaque.
    static func pattern(_ width: Int, _ height: Int) -> [UInt8] {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                pixels += [
                    UInt8(x * 255 / max(1, width - 1)), UInt8(y * 255 / max(1, height - 1)),
                    UInt8((x * 7 + y * 13) % 256),
                    255,
                ]
            }
        }
        return pixels
    }

    /// A queued cache job names its tiers before any worker sees them (`PhotoCacheRequest.check()`, in
    /// ReelExport, which does not link libvips): the names it accepts are the tiers a worker makes.
    @Test func cacheJobsNameTheTiersThereAre() {
        #expect(PhotoCacheRequest.tierNames == PhotoTier.standard.map(\.name))
    }

    @Test func thumbHashMatchesTheReferenceEncoder() throws {
        // Bytes from the reference encoder's Python port (PyPI `thumbhash` 0.1.2, rgba_to_thumb_hash) over
        // the same pixels: a landscape and a portrait picture.
        let landscape = try #require(ThumbHash.encode(width: 100, height: 75, rgba: Self.pattern(100, 75)))
        #expect(Data(landscape).base64EncodedString() == "3wcKNZqAh3dwd3d4eHh3eHCAB/h3")
        let portrait = try #require(ThumbHash.encode(width: 30, height: 100, rgba: Self.pattern(30, 100)))
        #expect(Data(portrait).base64EncodedString() == "3wcKOhqAcHeHd3d3cIAI+Hc=")
        #expect(abs((ThumbHash.approximateAspectRatio(landscape) ?? 0) - 100.0 / 75) < 0.2)
        #expect(abs((ThumbHash.approximateAspectRatio(portrait) ?? 0) - 3.0 / 7) < 0.2)
        // Over 100 pixels a side, or a wrong number of bytes: no hash.
        #expect(ThumbHash.encode(width: 101, height: 10, rgba: Self.pattern(101, 10)) == nil)
        #expect(ThumbHash.encode(width: 10, height: 10, rgba: [0, 0, 0]) == nil)
    }

    /// The mean red, green and blue (0...1) of a picture, as ffmpeg decodes it.
    static func meanColour(_ url: URL) async throws -> [Double] {
        let frame = try await Pictures.firstFrame(url, pixelFormat: "rgb24")
        var sums = [0.0, 0.0, 0.0]
        for index in stride(from: 0, to: frame.bytes.count, by: 3) {
            for channel in 0..<3 { sums[channel] += Double(frame.bytes[index + channel]) }
        }
        let count = Double(frame.bytes.count / 3)
        return sums.map { $0 / count / 255 }
    }

    /// Checks `photo`'s standard tiers (upright size `width` x `height`) against vips's own renders.
    func checkTiers(_ photo: String, width: Int, height: Int, folder: URL) async throws {
        let set = try PhotoRenderer.renderTiers(photo, PhotoTier.standard)
        #expect(set.width == width && set.height == height)
        try #require(set.tiers.map(\.tier) == PhotoTier.standard)
        for (tier, image) in set.tiers {
            let expected = tier.size(width: width, height: height)
            #expect(min(image.width, image.height) == min(tier.shortEdge, min(width, height)), "\(tier.name)")
            #expect(image.width == expected.width && image.height == expected.height, "\(tier.name)")
            let url = folder.appendingPathComponent("\(tier.name).\(tier.format.fileExtension)")
            try image.data.write(to: url)
            let probed = try #require(try await ProbedFile.probe(url).video)
            #expect(
                probed.codec_name == (tier.format == .webp ? "webp" : "mjpeg"),
                "\(tier.name): \(probed.codec_name ?? "-")")
            #expect(probed.width == image.width && probed.height == image.height)
            // vips straight from the photo to this size, encoded as the tier is (vipsthumbnail's way):
            // the tier, resampled from the larger tier, looks the same.
            let reference = folder.appendingPathComponent("vips-\(tier.name).\(tier.format.fileExtension)")
            let made = try await Tools.run(
                "vips",
                [
                    "thumbnail", photo, reference.path + "[Q=\(tier.quality),strip]", "\(image.width)", "--height",
                    "\(image.height)", "--export-profile", "srgb", "--size", "force",
                ])
            try #require(made.status == 0, "\(made.stderr)")
            let ssim = try await Pictures.ssim(url, against: reference)
            #expect(ssim >= 0.97, "\(tier.name) of \(photo): SSIM \(ssim)")
        }
        // The ThumbHash holds the picture's mean colour and shape.
        let hash = try #require(set.thumbHash)
        let average = try #require(ThumbHash.averageColour(hash))
        let thumbnail = folder.appendingPathComponent("thumbnail.webp")
        let mean = try await Self.meanColour(thumbnail)
        for (got, want) in zip([average.red, average.green, average.blue], mean) {
            #expect(abs(got - want) < 0.06, "ThumbHash mean \(average) against ffmpeg's \(mean)")
        }
        let ratio = try #require(ThumbHash.approximateAspectRatio(hash))
        #expect(abs(ratio - Double(width) / Double(height)) < 0.2, "\(ratio)")
    }

    @Test func theIPhoneHEICsTiersComeFromOneDecodeAndMatchVips() async throws {
        let folder = Fixtures.scratchFolder("tiers-heic")
        try await checkTiers(try PhoneFiles.heic, width: 3024, height: 4032, folder: folder)
    }

    @Test func aRotatedJPEGsTiersAreUpright() async throws {
        let folder = Fixtures.scratchFolder("tiers-jpeg")
        // The iPhone photo (3024x4032) as a JPEG stored turned a quarter (4032x3024) and shown upright by
        // EXIF orientation 6.
        let turned = folder.appendingPathComponent("turned.jpg")
        let rotated = try await Tools.run("vips", ["rot", try PhoneFiles.heic, turned.path + "[Q=92]", "d270"])
        try #require(rotated.status == 0, "\(rotated.stderr)")
        let tagged = try await Tools.run("exiftool", ["-q", "-overwrite_original", "-Orientation#=6", turned.path])
        try #require(tagged.status == 0, "\(tagged.stderr)")
        try await checkTiers(turned.path, width: 3024, height: 4032, folder: folder)
    }

    @Test func aSmallPhotoIsNeverEnlarged() async throws {
        let folder = Fixtures.scratchFolder("tiers-small")
        let png = folder.appendingPathComponent("small.png")
        try await Tools.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=200x150", "-frames:v", "1", png.path])
        let set = try PhotoRenderer.renderTiers(png.path, PhotoTier.standard)
        #expect(set.tiers.map { "\($0.image.width)x\($0.image.height)" } == ["200x150", "200x150"])
        #expect(throws: PhotoError.self) {
            try PhotoRenderer.renderTiers(
                png.path, [PhotoTier(name: "bad", shortEdge: 100, format: .jpeg, quality: 0)])
        }
    }

    /// A folder of JPEGs (one truncated) as cache items.
    static func items(_ folder: URL, count: Int) async throws -> [CacheItem] {
        var items: [CacheItem] = []
        for index in 0..<count {
            let url = folder.appendingPathComponent("photo\(index).jpg")
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=s=640x480", "-vf", "hue=h=\(index * 40)", "-frames:v", "1", url.path,
            ])
            items.append(CacheItem(key: DerivativeKey(assetID: "ASSET-\(index)/L0/001", version: "v1"), path: url.path))
        }
        return items
    }

    @Test func theStoreKeepsTiersByAssetVersionAndTierAndRecordsFailures() async throws {
        let folder = Fixtures.scratchFolder("derivative-store")
        var items = try await Self.items(folder, count: 3)
        // A truncated JPEG: recorded with its reason, never in the way of the others.
        let whole = try Data(contentsOf: URL(fileURLWithPath: items[2].path))
        try whole.prefix(whole.count / 3).write(to: URL(fileURLWithPath: items[2].path))
        let store = DerivativeStore(folder: folder.appendingPathComponent("cache").path)
        let manager = CachingImageManager(store: store, concurrency: 2)
        let report = await manager.startCachingImages(for: items)
        #expect(report == CacheReport(total: 3, made: 2, cached: 0, failed: 1, stopped: 0))
        for item in items.prefix(2) {
            #expect(store.isComplete(item.key, tiers: PhotoTier.standard, thumbHash: true))
            let thumbnail = try #require(store.cached(item.key, tier: .thumbnail))
            #expect(thumbnail.hasPrefix(store.folder + "/thumbnail/") && thumbnail.hasSuffix(".webp"))
            let probed = try #require(try await ProbedFile.probe(URL(fileURLWithPath: thumbnail)).video)
            #expect(probed.width == 333 && probed.height == 250)
        }
        let reason = try #require(store.failure(items[2].key))
        #expect(reason.contains("photo2.jpg"), "\(reason)")

        // Again: nothing is decoded. The recorded reason is reported as it is (changed here to prove it
        // was read, not found again), until retryFailed.
        try "marked\n".write(
            toFile: store.folder + "/failed/AS/ASSET-2_L0_001.v1.txt", atomically: true, encoding: .utf8)
        let outcomes = Mutex<[String: CacheOutcome]>([:])
        let again = await manager.startCachingImages(for: items) { progress in
            outcomes.withLock { $0[progress.item.key.assetID] = progress.outcome }
        }
        #expect(again == CacheReport(total: 3, made: 0, cached: 2, failed: 1, stopped: 0))
        #expect(outcomes.withLock { $0["ASSET-2/L0/001"] } == .failed("marked"))
        let retried = await manager.startCachingImages(for: [items[2]], retryFailed: true)
        #expect(retried.failed == 1 && store.failure(items[2].key)?.contains("photo2.jpg") == true)

        // A new version (an edit, a replaced file) gets new tiers and the old ones go.
        let old = items[0].key
        items[0].key = DerivativeKey(assetID: old.assetID, version: "v2")
        #expect(await manager.startCachingImages(for: [items[0]]).made == 1)
        #expect(store.cached(old, tier: .thumbnail) == nil && store.thumbHash(old) == nil)
        #expect(store.cached(items[0].key, tier: .preview) != nil)
        // No identifier names a path outside the store, and none clashes with another.
        let hostile = DerivativeKey(assetID: "../../etc/passwd", version: "../v")
        #expect(store.path(of: hostile, tier: .thumbnail).hasPrefix(store.folder + "/thumbnail/"))
        #expect(!store.path(of: hostile, tier: .thumbnail).contains("/../"))
        #expect(hostile.version == "v")
        #expect(
            store.path(of: DerivativeKey(assetID: "a/b", version: "1"), tier: .preview)
                != store.path(of: DerivativeKey(assetID: "a_b", version: "1"), tier: .preview))
        // Leftovers of the store's own writes: none.
        let names = FileManager.default.enumerator(atPath: store.folder)?.compactMap { $0 as? String } ?? []
        #expect(!names.contains { $0.hasSuffix(".partial") }, "\(names)")
    }

    @Test func theSmallestCachedTierThatCoversARequestServesIt() async throws {
        let folder = Fixtures.scratchFolder("cached-tier")
        let items = try await Self.items(folder, count: 1)
        let store = DerivativeStore(folder: folder.appendingPathComponent("cache").path)
        let manager = CachingImageManager(store: store)
        await manager.startCachingImages(for: items)
        func served(_ width: Int, _ height: Int, _ mode: ImageContentMode = .aspectFit) -> String? {
            manager.cachedTier(
                for: items[0].key, width: 640, height: 480, targetSize: ImageTargetSize(width: width, height: height),
                contentMode: mode)?.tier.name
        }
        // 640x480: the thumbnail tier is 333x250, the preview the photo's own size.
        #expect(served(300, 300) == "thumbnail")
        #expect(served(333, 333) == "thumbnail")
        #expect(served(340, 340) == "preview")
        #expect(served(300, 300, .aspectFill) == "preview")
        #expect(served(200, 200, .aspectFill) == "thumbnail")
        #expect(
            manager.cachedTier(for: items[0].key, width: 640, height: 480, targetSize: .maximum)?.tier.name == "preview"
        )
        let other = DerivativeKey(assetID: "ASSET-0/L0/001", version: "v9")
        #expect(
            manager.cachedTier(
                for: other, width: 640, height: 480, targetSize: ImageTargetSize(width: 100, height: 100)) == nil)
    }
}
