import Foundation

/// A set of thumbnails as a queued job asks for it: `reel thumbnail`'s options with the same names
/// and meanings (`reel thumbnail --submit`), or a manifest line's `thumbnails` object
/// (`{"asset": "a.mov", "thumbnails": {"count": 30, "maxSize": "320x180", "sheet": "10x3"}}`). Values
/// as written; `check()` reads them all, `resolve(duration:)` turns them into times for an asset.
///
/// The job writes a folder, published whole (`ThumbnailSetExport`): `<asset name>-001.jpg` … (in time
/// order), or with `sheet`, `<asset name>-sprite-001.jpg` … and `<asset name>-thumbnails.vtt`, named
/// as `reel thumbnail` names them in a folder.
public struct ThumbnailSetRequest: Sendable, Codable, Equatable {
    /// Times: seconds (`12.5`), `hh:mm:ss.fff`, a percentage (`50%`), or `still` (a library Live or
    /// Motion Photo's still's moment, the default for one when no time is asked).
    public var at: [String]?
    /// This many images, evenly spaced from the start.
    public var count: Int?
    /// One image every interval (`10s`, `500ms`, `2m`) from the start.
    public var every: String?
    /// Fit each image into `WxH` (`320x180`, `320x`, `x180`), aspect kept, never enlarged; sheets
    /// default to `160x`.
    public var maxSize: String?
    /// Decode the frame shown at each time (default: the nearest keyframe).
    public var exact: Bool?
    /// Keep the pixels as stored: no rotation or mirroring.
    public var noTransform: Bool?
    /// `jpeg` (default), `png` or `webp`.
    public var format: String?
    /// 1-100 (default 90).
    public var quality: Int?
    /// Sprite sheets of `COLSxROWS` cells and a WebVTT track (default one image every 10 s).
    public var sheet: String?

    public init(
        at: [String]? = nil, count: Int? = nil, every: String? = nil, maxSize: String? = nil, exact: Bool? = nil,
        noTransform: Bool? = nil, format: String? = nil, quality: Int? = nil, sheet: String? = nil
    ) {
        self.at = at
        self.count = count
        self.every = every
        self.maxSize = maxSize
        self.exact = exact
        self.noTransform = noTransform
        self.format = format
        self.quality = quality
        self.sheet = sheet
    }

    /// Whether no times are asked for: none of `at`, `count`, `every` and `sheet` (a library Live or
    /// Motion Photo's set then takes one picture at its still's moment).
    public var asksNoTimes: Bool { at == nil && count == nil && every == nil && sheet == nil }

    /// The keys of a manifest's `thumbnails` object.
    package static let keys = StrictKeys.propertyNames(of: ThumbnailSetRequest())

    /// The request checked: what `ThumbnailSetExport` makes.
    public struct Checked: Sendable {
        public var times: ThumbnailTimes
        /// The box each picture is fitted into (0: unbounded).
        public var maximumSize: AssetImageGenerator.Size
        public var exact: Bool
        public var appliesTransform: Bool
        public var format: ImageFormat
        public var quality: Int
        public var grid: (columns: Int, rows: Int)?
    }

    /// Reads every value; throws `invalid-argument` naming the first that cannot be read (the words
    /// `reel thumbnail` uses), or `unsupported-codec` for a format this FFmpeg cannot write.
    public func check() throws(ExportError) -> Checked {
        let chosen = [at != nil, count != nil, every != nil].filter { $0 }.count
        if chosen > 1 { throw ExportError(.invalidArgument, "a thumbnail set takes one of at, count and every") }
        if chosen == 0 && sheet == nil {
            throw ExportError(.invalidArgument, "a thumbnail set needs its times: at, count or every (or a sheet)")
        }
        let times: ThumbnailTimes
        if let count {
            guard count >= 1 else { throw ExportError(.invalidArgument, "the count must be at least 1, not \(count)") }
            times = .count(count)
        } else if let every {
            times = .every(try ThumbnailTimes.interval(every))
        } else if let at {
            var instants: [ThumbnailTimes.Instant] = []
            for text in at.flatMap({ $0.split(separator: ",").map(String.init) }) {
                instants.append(try ThumbnailTimes.instant(text))
            }
            if instants.isEmpty { throw ExportError(.invalidArgument, "a thumbnail set's at names no time") }
            times = .at(instants)
        } else {
            times = .every(10)
        }
        let quality = quality ?? 90
        guard (1...100).contains(quality) else {
            throw ExportError(.invalidArgument, "the quality must be between 1 and 100, not \(quality)")
        }
        var grid: (Int, Int)?
        if let sheet {
            guard let parsed = Self.grid(sheet) else {
                throw ExportError(.invalidArgument, "cannot read the sheet '\(sheet)'; write COLSxROWS, e.g. 10x10")
            }
            grid = parsed
        }
        var box = grid != nil ? (160, 0) : (0, 0)
        if let maxSize {
            guard let parsed = Self.size(maxSize) else {
                throw ExportError(
                    .invalidArgument, "cannot read the size '\(maxSize)'; write WxH, e.g. 320x180, 320x or x180")
            }
            box = parsed
        }
        var imageFormat = ImageFormat.jpeg
        if let format {
            guard let named = ImageFormat(rawValue: format.lowercased()) ?? ImageFormat(fileExtension: format) else {
                throw ExportError(.invalidArgument, "unknown image format '\(format)'; use jpeg, png or webp")
            }
            imageFormat = named
        }
        guard imageFormat.isAvailable else {
            throw ExportError(
                .unsupportedCodec,
                "this FFmpeg's libavcodec has no \(imageFormat == .webp ? "libwebp" : imageFormat.rawValue) encoder, so it cannot write \(imageFormat.rawValue) images; use jpeg or png"
            )
        }
        return Checked(
            times: times, maximumSize: .init(width: box.0, height: box.1), exact: exact ?? false,
            appliesTransform: noTransform != true, format: imageFormat, quality: quality, grid: grid)
    }

    /// `WxH`, `Wx`, `xH` → (W, H), 0 for a missing side; nil when it cannot be read.
    public static func size(_ text: String) -> (Int, Int)? {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let width = parts[0].isEmpty ? 0 : Int(parts[0])
        let height = parts[1].isEmpty ? 0 : Int(parts[1])
        guard let width, let height, width >= 0, height >= 0, width + height > 0 else { return nil }
        guard width == 0 || width >= 2, height == 0 || height >= 2 else { return nil }
        return (width, height)
    }

    /// `COLSxROWS` → (columns, rows), each 1...100; nil when it cannot be read.
    public static func grid(_ text: String) -> (Int, Int)? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let columns = Int(parts[0]), let rows = Int(parts[1]), (1...100).contains(columns),
            (1...100).contains(rows)
        else { return nil }
        return (columns, rows)
    }
}
