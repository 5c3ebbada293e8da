internal import CVipsShim
import Foundation
import ReelSystem

/// A size a photo server keeps of every photo, ready to serve: its short edge, format and quality.
/// Tiers are never enlarged: a photo smaller than the tier is kept at its own size.
public struct PhotoTier: Sendable, Equatable, Hashable, Codable {
    /// The tier's name, used in the cache's paths and on the command line (`thumbnail`, `preview`).
    public var name: String
    /// The short edge the picture is scaled to (Immich's `fit: outside`): a 4032x3024 photo's 250 px
    /// tier is 333x250.
    public var shortEdge: Int
    public var format: ImageOutputFormat
    /// 1-100, for JPEG, WebP and AVIF.
    public var quality: Int

    public init(name: String, shortEdge: Int, format: ImageOutputFormat, quality: Int) {
        self.name = name
        self.shortEdge = shortEdge
        self.format = format
        self.quality = quality
    }

    /// Immich's thumbnail: 250 px short edge, WebP at quality 80.
    public static let thumbnail = PhotoTier(name: "thumbnail", shortEdge: 250, format: .webp, quality: 80)
    /// Immich's preview: 1440 px short edge, JPEG at quality 80.
    public static let preview = PhotoTier(name: "preview", shortEdge: 1440, format: .jpeg, quality: 80)
    /// The tiers a cache makes unless told otherwise.
    public static let standard = [thumbnail, preview]

    /// What the tier's pixels depend on besides the photo: a tier made with other settings is another
    /// tier, and the cache's key says so.
    public var recipe: String { "\(shortEdge)\(format.fileExtension)\(quality)" }

    /// The box a picture of `width` x `height` (upright) is fitted into for this tier: the short edge
    /// on `shortEdge`, the long one unbounded; nil when the picture is no larger than the tier.
    func box(width: Int, height: Int) -> (width: Int32, height: Int32)? {
        guard min(width, height) > shortEdge else { return nil }
        let edge = Int32(clamping: shortEdge)
        return width <= height ? (edge, PhotoRenderer.unbounded) : (PhotoRenderer.unbounded, edge)
    }
}

/// A photo's tiers, made from one decode.
public struct PhotoTierSet: Sendable {
    /// Each tier asked for, encoded, in the order asked.
    public var tiers: [(tier: PhotoTier, image: RenderedPhoto)]
    /// The ThumbHash of the picture (from a copy of at most 100x100), nil when not asked for.
    public var thumbHash: [UInt8]?
    /// The photo's upright size.
    public var width: Int
    public var height: Int
}

extension PhotoRenderer {
    /// The photo at `path` as every tier of `tiers`, decoded **once**: the photo is decoded (shrunk on
    /// load where its format allows) straight to the largest tier, turned upright and converted to
    /// `colour`; that picture is kept in memory and each smaller tier and the ThumbHash are resampled
    /// from it, never from the file again. Metadata is stripped (a Display P3 tier keeps its profile).
    /// Throws as `render` does.
    public static func renderTiers(
        _ path: String, _ tiers: [PhotoTier], thumbHash: Bool = true, colour: PhotoColour = .sRGB,
        maxPixels: Int = defaultMaxPixels
    ) throws(PhotoError) -> PhotoTierSet {
        guard !tiers.isEmpty || thumbHash else {
            throw PhotoError(.invalidArgument, "no tier and no ThumbHash asked for")
        }
        for tier in tiers {
            guard tier.shortEdge > 0 else {
                throw PhotoError(.invalidArgument, "tier \(tier.name): the short edge must be at least 1 pixel")
            }
            try checkQuality(PhotoRenderOptions(format: tier.format, quality: tier.quality))
        }
        let (header, _) = try open(path, maxPixels: maxPixels)
        let swaps = (5...8).contains(header.orientation)
        let upright = (width: swaps ? header.height : header.width, height: swaps ? header.width : header.height)
        let conversion = colour.conversion(hasProfile: header.blob("icc-profile-data") != nil)
        // The largest tier first: the others are resampled from it.
        let order = tiers.indices.sorted { tiers[$0].shortEdge > tiers[$1].shortEdge }
        let largest = order.first.map { tiers[$0].box(width: upright.width, height: upright.height) } ?? nil
        let unbounded = Self.unbounded
        var decoded: OpaquePointer?
        guard
            reel_vips_thumbnail(
                path, largest?.width ?? unbounded, largest?.height ?? unbounded, 0, conversion, &decoded) == 0,
            let decoded
        else {
            throw Vips.failure(.unreadable, path, "could not be decoded")
        }
        let lazy = VipsImage(decoded)
        // The decode happens here, once; a damaged file fails here.
        var held: OpaquePointer?
        guard reel_vips_in_memory(lazy.pointer, &held) == 0, let held else {
            throw decodeFailure(path)
        }
        // Each tier is resampled from the one above it (held in memory), the ThumbHash from the smallest.
        var source = VipsImage(held)
        var sourceBox = largest
        var made: [Int: RenderedPhoto] = [:]
        for index in order {
            let tier = tiers[index]
            var options = PhotoRenderOptions(format: tier.format, quality: tier.quality, metadata: .strip)
            options.colour = colour
            if let box = tier.box(width: upright.width, height: upright.height),
                box.width != sourceBox?.width || box.height != sourceBox?.height
            {
                var resized: OpaquePointer?
                var memory: OpaquePointer?
                guard reel_vips_resized(source.pointer, box.width, box.height, &resized) == 0, let resized,
                    reel_vips_in_memory(resized, &memory) == 0, let memory
                else {
                    throw Vips.failure(.encodeFailed, path, "tier \(tier.name) could not be resampled")
                }
                reel_vips_release(resized)
                source = VipsImage(memory)
                sourceBox = box
            }
            made[index] = try encode(source, path, options)
        }
        var hash: [UInt8]?
        if thumbHash {
            var pixels: UnsafeMutableRawPointer?
            var width: Int32 = 0
            var height: Int32 = 0
            guard reel_vips_rgba(source.pointer, 100, &pixels, &width, &height) == 0, let pixels else {
                throw Vips.failure(.encodeFailed, path, "its ThumbHash could not be made")
            }
            defer { reel_vips_free(pixels) }
            let rgba = [UInt8](UnsafeRawBufferPointer(start: pixels, count: Int(width) * Int(height) * 4))
            hash = ThumbHash.encode(width: Int(width), height: Int(height), rgba: rgba)
        }
        return PhotoTierSet(
            tiers: tiers.indices.compactMap { index in made[index].map { (tiers[index], $0) } }, thumbHash: hash,
            width: upright.width, height: upright.height)
    }

    /// `renderTiers` on a thread of its own.
    public static func renderingTiers(
        _ path: String, _ tiers: [PhotoTier], thumbHash: Bool = true, colour: PhotoColour = .sRGB,
        maxPixels: Int = defaultMaxPixels
    ) async throws(PhotoError) -> PhotoTierSet {
        try await onOwnThread(named: "reel-photo") { () throws(PhotoError) in
            try renderTiers(path, tiers, thumbHash: thumbHash, colour: colour, maxPixels: maxPixels)
        }
    }

    /// A decode that failed as the pixels were computed: the file's fault, in vips's words.
    static func decodeFailure(_ path: String) -> PhotoError {
        let message = Vips.takeError().map(Vips.tidy) ?? "could not be decoded"
        return PhotoError(.unreadable, "\((path as NSString).lastPathComponent): \(message)")
    }
}
