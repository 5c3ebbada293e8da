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
    /// How far from each time the picture may be, `before,after` in seconds (`0.5`, `1,2`, `500ms,1s`),
    /// as `AVAssetImageGenerator`'s tolerances: the nearest keyframe within them, else the frame shown at
    /// the time. Default: for `at`, any distance (the nearest keyframe); for `count`, `every` and sheets,
    /// half the interval each way, so every time gets a picture of its own.
    public var tolerance: String?
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
        noTransform: Bool? = nil, format: String? = nil, quality: Int? = nil, sheet: String? = nil,
        tolerance: String? = nil
    ) {
        self.tolerance = tolerance
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
        /// The tolerances asked for, seconds before and after; nil: the default for `times`.
        public var tolerance: (before: Double, after: Double)? = nil

        /// The tolerances for an asset lasting `duration` (`ThumbnailSetRequest.tolerances`).
        public func tolerances(duration: Double) -> (before: Double, after: Double) {
            ThumbnailSetRequest.tolerances(times: times, exact: exact, asked: tolerance, duration: duration)
        }
    }

    /// How far from each time a picture may be: 0 both ways when `exact` or for a still's moment; the
    /// tolerances `asked`; else for instants any distance (the nearest keyframe, fast), and for a count,
    /// an interval or sheets just under half the interval each way, so no two times share a keyframe's picture
    /// (a frame decoded forward from the keyframe before it stands in where no keyframe is that close).
    public static func tolerances(
        times: ThumbnailTimes, exact: Bool, asked: (before: Double, after: Double)?, duration: Double
    ) -> (before: Double, after: Double) {
        if exact || times.namesStill { return (0, 0) }
        if let asked { return asked }
        switch times {
        case .at: return (.infinity, .infinity)
        // Just under half: two neighbouring times can then never take the same keyframe.
        case .count(let count):
            let half = count > 1 && duration > 0 ? duration / Double(count) * 0.499 : Double.infinity
            return (half, half)
        case .every(let interval): return (interval * 0.499, interval * 0.499)
        }
    }

    /// Reads `before,after` (or one value for both): seconds with an optional unit (`0.5`, `500ms`,
    /// `1s`), each at least 0. Throws `invalid-argument` naming the text.
    public static func tolerance(_ text: String) throws(ExportError) -> (before: Double, after: Double) {
        func seconds(_ part: Substring) -> Double? {
            let word = part.trimmingCharacters(in: .whitespaces).lowercased()
            let value =
                word.hasSuffix("ms")
                ? Double(word.dropLast(2)).map { $0 / 1000 }
                : Double(word.hasSuffix("s") ? String(word.dropLast()) : word)
            return value.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        }
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let before = seconds(parts[0]), let after = seconds(parts.last!) else {
            throw ExportError(
                .invalidArgument, "cannot read the tolerance '\(text)'; write before,after in seconds, e.g. 0.5 or 0,2")
        }
        return (before, after)
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
        if exact == true, tolerance != nil {
            throw ExportError(.invalidArgument, "exact means a tolerance of 0; give exact or a tolerance, not both")
        }
        return Checked(
            times: times, maximumSize: .init(width: box.0, height: box.1), exact: exact ?? false,
            appliesTransform: noTransform != true, format: imageFormat, quality: quality, grid: grid,
            tolerance: try tolerance.map(Self.tolerance))
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
