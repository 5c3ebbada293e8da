internal import CVipsShim
import Foundation
import ReelSystem

/// A photo's format, as the file's content says (never its name).
public enum PhotoFormat: String, Sendable, Codable, CaseIterable {
    case heic, avif, jpeg, png, webp, gif
}

/// An encoded picture's format.
public enum ImageOutputFormat: String, Sendable, Codable, CaseIterable {
    case jpeg, webp, png, avif

    /// The file extension it is written with.
    public var fileExtension: String { self == .jpeg ? "jpg" : rawValue }

    var shimValue: Int32 {
        switch self {
        case .jpeg: Int32(REEL_VIPS_JPEG)
        case .webp: Int32(REEL_VIPS_WEBP)
        case .png: Int32(REEL_VIPS_PNG)
        case .avif: Int32(REEL_VIPS_AVIF)
        }
    }
}

/// Which of a photo's metadata a render writes (the policy exports use).
public enum PhotoMetadata: String, Sendable, Codable, CaseIterable {
    /// All of it: EXIF (with Orientation 1, as the picture is upright), XMP, IPTC, the ICC profile.
    case keep
    /// As `keep` without location (the GPS IFD), device (make, model, lens, serial numbers, software),
    /// the maker note (Apple's content identifier is there) and the XMP and IPTC packets.
    case sharing
    /// None (the picture is sRGB, which a file without a profile means).
    case strip

    var shimValue: Int32 {
        switch self {
        case .keep: Int32(REEL_VIPS_KEEP)
        case .sharing: Int32(REEL_VIPS_SHARING)
        case .strip: Int32(REEL_VIPS_STRIP)
        }
    }
}

/// What a photo's header says, as a viewer shows it.
public struct PhotoInfo: Sendable, Codable, Equatable {
    public var format: PhotoFormat
    /// Width and height as displayed: after the EXIF orientation (JPEG, PNG, WebP) or HEIF's
    /// `irot`/`imir` (which libheif applies as it decodes).
    public var width: Int
    public var height: Int
    /// The EXIF orientation (1-8) a render applies; 1 when the picture is stored upright or the
    /// container's transform is already applied (HEIF).
    public var orientation: Int
    /// libvips's interpretation of the decoded pixels (`srgb`, `b-w`, `rgb16`, `cmyk`).
    public var colourSpace: String
    /// The embedded ICC profile's description (`Display P3`, `sRGB IEC61966-2.1`), nil without one.
    public var iccProfile: String?
    /// Bits per sample of the decoded pixels.
    public var bitDepth: Int
    public var hasAlpha: Bool
    /// Pictures in the file (a GIF's frames, a HEIF's top-level images); renders use the first (or
    /// HEIF's primary).
    public var pages: Int
    /// HEIF only, from libheif: the nclx colour box by name (`Display P3`, `sRGB`, `BT.2020 PQ`) or its
    /// code points, when the file has one.
    public var nclx: String? = nil
    /// HEIF only: whether the primary image has a depth image, and an HDR gain map.
    public var hasDepth: Bool? = nil
    public var hasGainMap: Bool? = nil
    /// HEIF only: embedded thumbnail images (an iPhone's is about 320x240).
    public var embeddedThumbnails: Int? = nil

    /// The colour as people name it: the ICC profile's description, else the nclx box's name.
    public var colourName: String? { iccProfile ?? nclx }
}

/// A rendered picture, encoded in memory.
public struct RenderedPhoto: Sendable {
    public var data: Data
    public var width: Int
    public var height: Int
    public var format: ImageOutputFormat
    /// Where its pixels came from.
    public var source: PhotoSource = .picture
    /// A quick, low-quality picture delivered ahead of the final one (PhotoKit's
    /// `PHImageResultIsDegradedKey`).
    public var degraded = false
}

/// PhotoKit's `PHImageRequestOptionsResizeMode`: how closely a render matches the size asked.
public enum PhotoResizeMode: String, Sendable, Codable, CaseIterable {
    /// No resizing: the whole picture as stored (upright), whatever size was asked.
    case none
    /// The size asked or slightly larger, the cheapest way: a HEIF's embedded thumbnail, unscaled, when it
    /// is at least as large as the render would be; otherwise as `exact`.
    case fast
    /// Exactly the size asked (fit: inside the box, one side on it; fill: the box), from the main picture,
    /// never enlarged. A crop needs it.
    case exact
}

/// Where a rendered picture's pixels came from.
public enum PhotoSource: String, Sendable, Codable, CaseIterable {
    /// The main picture, decoded (a JPEG or WebP at a reduced scale when the size allows it).
    case picture
    /// A HEIF's embedded thumbnail item.
    case embeddedThumbnail = "embedded-thumbnail"
    /// A JPEG decoded at 1/8 of its size by libjpeg (a degraded picture).
    case reducedDecode = "reduced-decode"
    /// A tier a caching image manager made earlier (`CachingImageManager`), served without decoding
    /// the photo.
    case cachedTier = "cached-tier"
}

/// The colour space a render writes.
public enum PhotoColour: String, Sendable, Codable, CaseIterable {
    case sRGB = "srgb"
    /// Display P3 (libvips's built-in profile), an iPhone's and most phones' wide gamut.
    case displayP3 = "p3"

    /// The shim's conversion for a photo with (or without) an ICC profile of its own. An untagged photo
    /// is sRGB: kept as it is for sRGB, converted from sRGB for Display P3.
    func conversion(hasProfile: Bool) -> Int32 {
        switch (self, hasProfile) {
        case (.sRGB, false): Int32(REEL_VIPS_COLOUR_NONE)
        case (.sRGB, true): Int32(REEL_VIPS_COLOUR_TO_SRGB)
        case (.displayP3, true): Int32(REEL_VIPS_COLOUR_TO_P3)
        case (.displayP3, false): Int32(REEL_VIPS_COLOUR_SRGB_TO_P3)
        }
    }
}

/// How to render a photo: a box to fit (or fill), never enlarged, upright and in sRGB.
public struct PhotoRenderOptions: Sendable, Equatable {
    /// The box; 0 leaves a side unbounded (both 0: the whole picture, no scaling).
    public var maxWidth: Int
    public var maxHeight: Int
    /// Fill the box and crop the centre, instead of fitting inside it.
    public var fill: Bool
    public var format: ImageOutputFormat
    /// 1-100, for JPEG, WebP and AVIF.
    public var quality: Int
    /// Which metadata to write (default none, as thumbnails).
    public var metadata: PhotoMetadata
    /// The part of the upright picture to render, in unit coordinates (PhotoKit's `normalizedCropRect`:
    /// x, y, width, height from the top left); nil for all of it. The box then applies to that part.
    public var crop: (x: Double, y: Double, width: Double, height: Double)? = nil
    /// How closely the size asked is matched (PhotoKit's resizeMode); a crop needs `exact`.
    public var resizeMode: PhotoResizeMode = .exact
    /// The colour space written: sRGB (the default, what every viewer assumes), or Display P3 with its
    /// ICC profile (kept whatever `metadata` says), which keeps an iPhone photo's wider gamut.
    public var colour: PhotoColour = .sRGB

    public init(
        maxWidth: Int = 0, maxHeight: Int = 0, fill: Bool = false, format: ImageOutputFormat = .jpeg,
        quality: Int = 90, metadata: PhotoMetadata = .strip
    ) {
        self.maxWidth = maxWidth
        self.maxHeight = maxHeight
        self.fill = fill
        self.format = format
        self.quality = quality
        self.metadata = metadata
    }

    public static func == (a: PhotoRenderOptions, b: PhotoRenderOptions) -> Bool {
        a.maxWidth == b.maxWidth && a.maxHeight == b.maxHeight && a.fill == b.fill && a.format == b.format
            && a.quality == b.quality && a.metadata == b.metadata && a.resizeMode == b.resizeMode
            && a.colour == b.colour
            && a.crop.map { [$0.x, $0.y, $0.width, $0.height] }
                == b.crop.map { [$0.x, $0.y, $0.width, $0.height] }
    }
}

/// Photos through libvips (with libheif for HEIC and AVIF): the header's facts and resized, upright
/// sRGB renders. Thread-safe and stateless; the async forms run the blocking work on a thread of their
/// own, off Swift's cooperative pool.
public enum PhotoRenderer {
    /// The most pixels a photo may have (a 200 MP phone photo has 200 million).
    public static let defaultMaxPixels = 250_000_000

    /// What the header of the photo at `path` says. Throws `unreadable` for a file libvips does not
    /// read as a photo, `limit-exceeded` for one over `maxPixels`.
    public static func info(_ path: String, maxPixels: Int = defaultMaxPixels) throws(PhotoError) -> PhotoInfo {
        let (image, format) = try open(path, maxPixels: maxPixels)
        let swaps = (5...8).contains(image.orientation)
        let interpretation = image.interpretation
        let alpha =
            image.bands == 2 || image.bands == 4 && interpretation != "cmyk" || image.bands == 5
        var info = PhotoInfo(
            format: format, width: swaps ? image.height : image.width, height: swaps ? image.width : image.height,
            orientation: image.orientation, colourSpace: interpretation,
            iccProfile: image.blob("icc-profile-data").flatMap(ICCProfile.description), bitDepth: image.bits,
            hasAlpha: alpha, pages: max(1, image.pages))
        if format == .heic || format == .avif {
            var facts = ReelHeifFacts()
            if reel_heif_facts(path, &facts) == 0 {
                if facts.nclx != 0 {
                    info.nclx = nclxName(
                        primaries: Int(facts.primaries), transfer: Int(facts.transfer), matrix: Int(facts.matrix),
                        fullRange: facts.full_range != 0)
                }
                info.hasDepth = facts.depth != 0
                info.hasGainMap = facts.gain_map != 0
                info.embeddedThumbnails = Int(facts.thumbnails)
                if facts.luma_bits > 8 { info.bitDepth = Int(facts.luma_bits) }
            }
        }
        return info
    }

    /// An nclx box (ITU-T H.273 code points) by the name people use, else its numbers.
    static func nclxName(primaries: Int, transfer: Int, matrix: Int, fullRange: Bool) -> String {
        switch (primaries, transfer) {
        case (12, 13): return "Display P3"
        case (1, 13): return "sRGB"
        case (1, 1), (1, 6): return "BT.709"
        case (9, 16): return "BT.2020 PQ"
        case (9, 18): return "BT.2020 HLG"
        default:
            return "nclx \(primaries)/\(transfer)/\(matrix)" + (fullRange ? " full range" : " limited range")
        }
    }

    /// The photo at `path` rendered as `options` say: decoded once with shrink-on-load, upright, sRGB.
    public static func render(_ path: String, _ options: PhotoRenderOptions, maxPixels: Int = defaultMaxPixels)
        throws(PhotoError) -> RenderedPhoto
    {
        if options.crop != nil && options.resizeMode != .exact {
            throw PhotoError(.invalidArgument, "a crop needs the exact resize mode, not \(options.resizeMode.rawValue)")
        }
        let (header, format, conversion, width, height) = try prepare(path, options, maxPixels: maxPixels)
        let scaled = options.resizeMode != .none
        let unbounded = Self.unbounded
        var pointer: OpaquePointer?
        let made: Int32
        var source = PhotoSource.picture
        if options.resizeMode == .fast, format == .heic || format == .avif,
            let thumbnail = embeddedThumbnailSize(path),
            covers(thumbnail, picture: (header.width, header.height), options)
        {
            // The embedded thumbnail as it is: the nearest larger size the file has.
            made = reel_vips_embedded_thumbnail(path, unbounded, unbounded, conversion, &pointer)
            source = .embeddedThumbnail
        } else if let crop = options.crop {
            guard crop.x >= 0, crop.y >= 0, crop.width > 0, crop.height > 0, crop.x + crop.width <= 1 + 1e-9,
                crop.y + crop.height <= 1 + 1e-9
            else {
                throw PhotoError(
                    .invalidArgument, "the crop rectangle must lie within the unit square (x,y,w,h from 0 to 1)")
            }
            made = reel_vips_crop_thumbnail(
                path, crop.x, crop.y, crop.width, crop.height, width, height, options.fill ? 1 : 0, conversion,
                &pointer)
        } else {
            made = reel_vips_thumbnail(
                path, width, height, scaled && options.fill ? 1 : 0, conversion, &pointer)
        }
        guard made == 0, let pointer else {
            throw Vips.failure(.unreadable, path, "could not be decoded")
        }
        var rendered = try encode(VipsImage(pointer), path, options)
        rendered.source = source
        return rendered
    }

    /// A side no box bounds.
    static let unbounded: Int32 = 10_000_000

    static func checkQuality(_ options: PhotoRenderOptions) throws(PhotoError) {
        guard (1...100).contains(options.quality) else {
            throw PhotoError(.encodeFailed, "quality must be between 1 and 100, not \(options.quality)")
        }
    }

    /// What both renders start with: the quality checked, the header read (the limits' checks; it also
    /// says whether there is a profile to convert from), the colour conversion and the box to fit.
    private static func prepare(_ path: String, _ options: PhotoRenderOptions, maxPixels: Int) throws(PhotoError)
        -> (header: VipsImage, format: PhotoFormat, conversion: Int32, width: Int32, height: Int32)
    {
        try checkQuality(options)
        let (header, format) = try open(path, maxPixels: maxPixels)
        let conversion = options.colour.conversion(hasProfile: header.blob("icc-profile-data") != nil)
        let scaled = options.resizeMode != .none
        let width = scaled && options.maxWidth > 0 ? Int32(clamping: options.maxWidth) : unbounded
        let height = scaled && options.maxHeight > 0 ? Int32(clamping: options.maxHeight) : unbounded
        return (header, format, conversion, width, height)
    }

    /// A quick, low-quality picture of the photo at `path` for the box `options` asks, delivered before
    /// the final one (PhotoKit's opportunistic delivery) or instead of it (fast delivery): a HEIF's
    /// embedded thumbnail, or a JPEG decoded at 1/8 scale, fitted into the box when larger. nil when the
    /// photo has no cheaper picture than a full decode (PNG, WebP, GIF, a HEIF without a thumbnail), and
    /// for a crop (the quick pictures are of the whole photo).
    public static func renderDegraded(
        _ path: String, _ options: PhotoRenderOptions, maxPixels: Int = defaultMaxPixels
    ) throws(PhotoError) -> RenderedPhoto? {
        guard options.crop == nil else {
            try checkQuality(options)
            return nil
        }
        let (header, format, conversion, width, height) = try prepare(path, options, maxPixels: maxPixels)
        var pointer: OpaquePointer?
        let made: Int32
        let source: PhotoSource
        switch format {
        case .heic, .avif:
            guard embeddedThumbnailSize(path) != nil else { return nil }
            made = reel_vips_embedded_thumbnail(path, width, height, conversion, &pointer)
            source = .embeddedThumbnail
        case .jpeg:
            // Only worth it when the reduced picture still has something to show.
            guard header.width >= 512 || header.height >= 512 else { return nil }
            made = reel_vips_reduced(path, 8, width, height, conversion, &pointer)
            source = .reducedDecode
        default:
            return nil
        }
        guard made == 0, let pointer else {
            throw Vips.failure(.unreadable, path, "could not be decoded")
        }
        var rendered = try encode(VipsImage(pointer), path, options)
        rendered.source = source
        rendered.degraded = true
        return rendered
    }

    /// The size of the HEIF file's embedded thumbnail (libheif's first thumbnail item of the primary
    /// image), nil without one.
    static func embeddedThumbnailSize(_ path: String) -> (width: Int, height: Int)? {
        var width: Int32 = 0
        var height: Int32 = 0
        guard reel_heif_thumbnail_size(path, &width, &height) == 0, width > 0, height > 0 else { return nil }
        return (Int(width), Int(height))
    }

    /// Whether a thumbnail of `thumbnail`'s size is at least as large as the render of `picture` (the
    /// upright size) that `options` ask for: fit scales the picture into the box, fill over it, never up.
    static func covers(
        _ thumbnail: (width: Int, height: Int), picture: (width: Int, height: Int), _ options: PhotoRenderOptions
    ) -> Bool {
        guard picture.width > 0, picture.height > 0 else { return false }
        let across = options.maxWidth > 0 ? Double(options.maxWidth) / Double(picture.width) : .infinity
        let down = options.maxHeight > 0 ? Double(options.maxHeight) / Double(picture.height) : .infinity
        var scale = options.fill ? max(across, down) : min(across, down)
        if !scale.isFinite || scale > 1 { scale = 1 }
        let needed = (
            width: Int((Double(picture.width) * scale).rounded()),
            height: Int((Double(picture.height) * scale).rounded())
        )
        return thumbnail.width >= needed.width && thumbnail.height >= needed.height
    }

    /// `image` encoded as `options` say.
    static func encode(_ image: VipsImage, _ path: String, _ options: PhotoRenderOptions) throws(PhotoError)
        -> RenderedPhoto
    {
        var buffer: UnsafeMutableRawPointer?
        var length = 0
        // A Display P3 picture keeps its profile even with nothing else: without it, it reads as sRGB.
        let metadata =
            options.colour == .displayP3 && options.metadata == .strip
            ? Int32(REEL_VIPS_STRIP_KEEP_ICC) : options.metadata.shimValue
        let saved = reel_vips_save(
            image.pointer, options.format.shimValue, Int32(options.quality), metadata, &buffer, &length)
        defer { reel_vips_free(buffer) }
        guard saved == 0, let buffer, length > 0 else {
            // Pixels are decoded as they are encoded: a damaged file fails here, and is the file's fault.
            let message = Vips.takeError().map(Vips.tidy) ?? "could not be encoded as \(options.format.rawValue)"
            let name = (path as NSString).lastPathComponent
            let decoding = ["load", "truncated", "premature", "corrupt", "decode", "heif", "read"]
                .contains { message.lowercased().contains($0) }
            throw PhotoError(decoding ? .unreadable : .encodeFailed, "\(name): \(message)")
        }
        return RenderedPhoto(
            data: Data(bytes: buffer, count: length), width: image.width, height: image.height, format: options.format)
    }

    /// `info` on a thread of its own.
    public static func loadInfo(_ path: String, maxPixels: Int = defaultMaxPixels) async throws(PhotoError)
        -> PhotoInfo
    {
        try await onOwnThread(named: "reel-photo") { () throws(PhotoError) in try info(path, maxPixels: maxPixels) }
    }

    /// `render` on a thread of its own.
    public static func rendering(
        _ path: String, _ options: PhotoRenderOptions, maxPixels: Int = defaultMaxPixels
    ) async throws(PhotoError) -> RenderedPhoto {
        try await onOwnThread(named: "reel-photo") { () throws(PhotoError) in
            try render(path, options, maxPixels: maxPixels)
        }
    }

    /// `renderDegraded` on a thread of its own.
    public static func renderingDegraded(
        _ path: String, _ options: PhotoRenderOptions, maxPixels: Int = defaultMaxPixels
    ) async throws(PhotoError) -> RenderedPhoto? {
        try await onOwnThread(named: "reel-photo") { () throws(PhotoError) in
            try renderDegraded(path, options, maxPixels: maxPixels)
        }
    }

    /// The header, after checking that a photo loader reads it and that it is within the limit.
    static func open(_ path: String, maxPixels: Int) throws(PhotoError) -> (VipsImage, PhotoFormat) {
        try Vips.start()
        let name = (path as NSString).lastPathComponent
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw PhotoError(.unreadable, "\(name): no such file, or it cannot be read")
        }
        guard let loader = reel_vips_loader(path).map({ String(cString: $0) }) else {
            throw PhotoError(.unreadable, "\(name): not a photo libvips reads (HEIC, AVIF, JPEG, PNG, WebP, GIF)")
        }
        guard let base = loaderFormat(loader) else {
            throw PhotoError(.unreadable, "\(name): not a photo Reel renders (libvips reads it with \(loader))")
        }
        if base == .heic { try HEIFLayout.check(path) }
        var pointer: OpaquePointer?
        guard reel_vips_open(path, &pointer) == 0, let pointer else {
            // libheif refuses a declared size over its own limit before Reel sees the header.
            let failure = Vips.failure(.unreadable, path, "its header could not be read")
            let text = failure.message.lowercased()
            if text.contains("security limit") || text.contains("maximum image size") {
                throw PhotoError(.limitExceeded, failure.message)
            }
            throw failure
        }
        let image = VipsImage(pointer)
        var format = base
        if base == .heic, image.string("heif-compression") == "av1" { format = .avif }
        let pixels = image.width.multipliedReportingOverflow(by: image.height)
        if pixels.overflow || pixels.partialValue > maxPixels {
            throw PhotoError(
                .limitExceeded,
                "\(name): \(image.width)x\(image.height) is over the limit of \(maxPixels / 1_000_000) megapixels")
        }
        return (image, format)
    }

    /// The photo format a libvips loader class reads, nil for loaders Reel does not render with.
    static func loaderFormat(_ loader: String) -> PhotoFormat? {
        let table: [(String, PhotoFormat)] = [
            ("VipsForeignLoadJpeg", .jpeg), ("VipsForeignLoadPng", .png), ("VipsForeignLoadWebp", .webp),
            ("VipsForeignLoadNsgif", .gif), ("VipsForeignLoadGif", .gif), ("VipsForeignLoadHeif", .heic),
        ]
        return table.first { loader.hasPrefix($0.0) }?.1
    }
}
