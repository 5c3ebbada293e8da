import Foundation
import ReelBoxes
import ReelExport
import ReelMedia

/// Reads what a file says about itself from its headers: images with Reel's own parsers (JPEG,
/// HEIF, PNG, GIF), videos through ReelExport's probe (whatever libavformat reads within the input
/// limits) plus ReelBoxes for the `mebx` still moment. Never reads pixels.
public enum FileInspector {
    /// Why a file was not indexed: not media Reel knows, or unreadable.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let reason: String
        public var description: String { reason }
    }

    /// Extensions that are worth asking libavformat about when the first bytes name no format Reel
    /// reads itself.
    static let videoExtensions: Set<String> = [
        "mov", "mp4", "m4v", "3gp", "3g2", "mkv", "webm", "avi", "mts", "m2ts", "ts", "mpg", "mpeg", "wmv", "asf",
        "flv", "mxf", "dv", "ogv",
    ]

    enum Sniffed {
        case jpeg, png, gif, heif, isoMovie, otherMedia, notMedia
    }

    static func sniff(_ head: [UInt8], name: String) -> Sniffed {
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: PNGParser.signature) { return .png }
        if head.starts(with: Array("GIF8".utf8)) { return .gif }
        if head.count >= 12, Array(head[4..<8]) == Array("ftyp".utf8) {
            let major = FourCC(rawValue: head[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            var brands: [FourCC] = [major]
            var index = 16
            while index + 4 <= head.count {
                brands.append(FourCC(rawValue: head[index..<index + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
                index += 4
            }
            if HEIFParser.imageBrands.contains(major) { return .heif }
            return .isoMovie
        }
        let ext = PathParts.pathExtension(ofName: name).lowercased()
        if head.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) || head.starts(with: Array("RIFF".utf8))
            || videoExtensions.contains(ext)
        {
            return .otherMedia
        }
        return .notMedia
    }

    /// The facts of the file at `path`, read from the file itself (`reel probe` of a photo): what a scan
    /// would index for it.
    public static func inspect(path: String, limits: InputLimits) throws(Refusal) -> FileFacts {
        let source: FileSource
        do {
            source = try FileSource(path: path)
        } catch {
            throw Refusal(reason: "unreadable: \(error.message)")
        }
        return try inspect(path: path, source: source, limits: limits)
    }

    /// The facts of the file at `path`, opened through `source`. Throws `Refusal` for files that are
    /// not photos or videos Reel reads, or whose headers are broken past use.
    public static func inspect(path: String, source: any ByteSource, limits: InputLimits) throws(Refusal) -> FileFacts {
        let name = PathParts.name(of: path)
        let head: [UInt8]
        do {
            head = try source.read(at: 0, length: Int(min(64, source.count)))
        } catch {
            throw Refusal(reason: "unreadable: \(error.message)")
        }
        if PathParts.pathExtension(ofName: name).lowercased() == "aae" { return adjustmentData(source) }
        do {
            switch sniff(head, name: name) {
            case .jpeg: return try jpeg(path: path, source: source, limits: limits)
            case .heif: return try heif(path: path, source: source, limits: limits)
            case .png: return try png(source)
            case .gif: return try gif(source)
            case .isoMovie:
                return try video(path: path, source: source, limits: limits, demuxer: movDemuxer(for: head))
            case .otherMedia: return try video(path: path, source: source, limits: limits)
            case .notMedia: throw Refusal(reason: "not a photo or video Reel reads")
            }
        } catch let error as BoxError {
            throw Refusal(reason: "unreadable header: \(error.description)")
        } catch let error as Refusal {
            throw error
        } catch {
            throw Refusal(reason: "\(error)")
        }
    }

    // MARK: - Edits

    /// An edit's AAE property list: never refused (a garbled one is indexed with a warning, so its
    /// photo keeps its edit and the scan goes on).
    static func adjustmentData(_ source: any ByteSource) -> FileFacts {
        var facts = FileFacts(
            mediaType: .unknown, format: "aae", uniformTypeIdentifier: AAEParser.uniformTypeIdentifier)
        guard source.count <= Int64(AAEParser.maxBytes) else {
            facts.warnings = [
                "adjustment data unreadable: \(source.count) bytes, over the limit of \(AAEParser.maxBytes)"
            ]
            return facts
        }
        do {
            switch AAEParser.parse(try source.read(at: 0, length: Int(source.count))) {
            case .success(let info): facts.adjustment = info
            case .failure(let error): facts.warnings = ["adjustment data unreadable: \(error.reason)"]
            }
        } catch {
            facts.warnings = ["adjustment data unreadable: \(error.description)"]
        }
        return facts
    }

    // MARK: - Images

    static func jpeg(path: String, source: any ByteSource, limits: InputLimits) throws -> FileFacts {
        let header = try JPEGParser.parse(source)
        var facts = FileFacts(mediaType: .image, format: "jpeg", uniformTypeIdentifier: "public.jpeg")
        facts.warnings = header.warnings
        guard let width = header.width, let height = header.height else {
            throw Refusal(reason: "a JPEG without a frame header (truncated or not an image)")
        }
        let exif = header.exif.map(ExifParser.parse)
        apply(exif, width: width, height: height, to: &facts, useOrientation: true)
        let xmp = header.xmp.map(XMPParser.parse)
        let extended = header.extendedXMP.map(XMPParser.parse)
        apply(xmp: merge(xmp, extended), to: &facts)
        MotionPhotoDetector.detect(
            path: path, source: source, xmp: merge(xmp, extended), mpvd: nil, limits: limits, into: &facts)
        return facts
    }

    static func heif(path: String, source: any ByteSource, limits: InputLimits) throws -> FileFacts {
        let header = try HEIFParser.parse(source)
        let brand = header.majorBrand?.description ?? "heic"
        let isAVIF = brand.hasPrefix("avi")
        var facts = FileFacts(
            mediaType: .image, format: isAVIF ? "avif" : "heic",
            uniformTypeIdentifier: isAVIF ? "public.avif" : (brand == "mif1" ? "public.heif" : "public.heic"))
        facts.warnings = header.warnings
        guard let width = header.width, let height = header.height else {
            throw Refusal(reason: "a HEIF file without an image size (ispe); truncated or not an image")
        }
        // HEIF orients with irot (already applied); Exif's orientation is informational there.
        apply(header.exif.map(ExifParser.parse), width: width, height: height, to: &facts, useOrientation: false)
        let xmp = header.xmp.map(XMPParser.parse)
        apply(xmp: xmp, to: &facts)
        MotionPhotoDetector.detect(
            path: path, source: source, xmp: xmp, mpvd: header.mpvd, limits: limits, into: &facts)
        return facts
    }

    static func png(_ source: any ByteSource) throws -> FileFacts {
        let header = try PNGParser.parse(source)
        var facts = FileFacts(mediaType: .image, format: "png", uniformTypeIdentifier: "public.png")
        guard let width = header.width, let height = header.height else {
            throw Refusal(reason: "a PNG without IHDR")
        }
        facts.isAnimated = header.isAnimated
        apply(header.exif.map(ExifParser.parse), width: width, height: height, to: &facts, useOrientation: true)
        apply(xmp: header.xmp.map(XMPParser.parse), to: &facts)
        return facts
    }

    static func gif(_ source: any ByteSource) throws -> FileFacts {
        let header = try GIFParser.parse(source)
        var facts = FileFacts(mediaType: .image, format: "gif", uniformTypeIdentifier: "com.compuserve.gif")
        facts.pixelWidth = header.width
        facts.pixelHeight = header.height
        facts.isAnimated = header.isAnimated
        return facts
    }

    static func merge(_ first: XMPFacts?, _ second: XMPFacts?) -> XMPFacts? {
        guard var merged = first else { return second }
        if let second {
            merged.properties.merge(second.properties) { old, _ in old }
            if merged.items.isEmpty { merged.items = second.items }
        }
        return merged
    }

    static func apply(_ exif: ExifFacts?, width: Int, height: Int, to facts: inout FileFacts, useOrientation: Bool) {
        let turned = useOrientation && (5...8).contains(exif?.orientation ?? 1)
        facts.pixelWidth = turned ? height : width
        facts.pixelHeight = turned ? width : height
        guard let exif else { return }
        facts.warnings += exif.warnings
        if let created = exif.creationDate {
            facts.creationDate = created.date
            facts.creationTimeZoneOffset = created.offset
            facts.creationDateSource = "exif"
        }
        facts.latitude = exif.latitude
        facts.longitude = exif.longitude
        facts.altitude = exif.altitude
        facts.make = exif.make
        facts.model = exif.model
        if let apple = exif.apple {
            facts.contentIdentifier = apple.contentIdentifier
            facts.burstIdentifier = apple.burstUUID
            facts.isHDR = apple.hdrImageType == 3
        }
    }

    static func apply(xmp: XMPFacts?, to facts: inout FileFacts) {
        guard let xmp, facts.creationDate == nil else { return }
        for (namespace, name) in [
            (XMPFacts.exif, "DateTimeOriginal"), (XMPFacts.photoshop, "DateCreated"), (XMPFacts.xmp, "CreateDate"),
        ] {
            if let text = xmp.value(namespace, name), let parsed = parseXMPDate(text) {
                facts.creationDate = parsed.date
                facts.creationTimeZoneOffset = parsed.offset
                facts.creationDateSource = "xmp"
                return
            }
        }
    }

    /// XMP dates: ISO 8601 with or without fraction and zone (a time without zone is read as UTC,
    /// and no offset is returned).
    static func parseXMPDate(_ text: String) -> (date: Date, offset: Int?)? {
        let zoned =
            text.count > 19
            && (text.hasSuffix("Z") || text.dropFirst(19).contains("+") || text.dropFirst(19).contains("-"))
        for format in [
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXXXX", "yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSS",
            "yyyy-MM-dd'T'HH:mm:ss",
        ] {
            if let date = DateFormats.utcDate(text, format: format) {
                var offset: Int?
                if zoned, !text.hasSuffix("Z") { offset = ExifFacts.parseOffset(String(text.suffix(6))) }
                if text.hasSuffix("Z") { offset = 0 }
                return (date, offset)
            }
        }
        return nil
    }

    // MARK: - Videos

    /// `mov` for an ISO file whose first box is an `ftyp` of at least 8 bytes and not JPEG 2000's:
    /// the demuxer FFmpeg's probe gives such a file its top score, named so the probe is skipped
    /// (about half of opening a small movie's header, perf). Any other start is probed.
    static func movDemuxer(for head: [UInt8]) -> String? {
        guard head.count >= 12, Array(head[4..<8]) == Array("ftyp".utf8) else { return nil }
        let size = head[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let brand = Array(head[8..<12])
        guard size >= 8, brand != Array("jp2 ".utf8), brand != Array("jpx ".utf8) else { return nil }
        return "mov"
    }

    static func video(path: String, source: any ByteSource, limits: InputLimits, demuxer: String? = nil) throws
        -> FileFacts
    {
        let asset: Asset
        do {
            asset = try Asset.header(of: URL(fileURLWithPath: path), limits: limits, demuxer: demuxer)
        } catch {
            throw Refusal(reason: error.message)
        }
        guard asset.videoTrack != nil else {
            throw Refusal(reason: "no video track (audio-only files are not indexed)")
        }
        let uti: String
        let container = asset.container
        let ext = PathParts.pathExtension(of: path).lowercased()
        if container.hasPrefix("mov") {
            uti =
                asset.metadata["major_brand"]?.hasPrefix("qt") == true || ext == "mov"
                ? "com.apple.quicktime-movie" : "public.mpeg-4"
        } else if container.contains("matroska") {
            uti = ext == "webm" ? "org.webmproject.webm" : "org.matroska.mkv"
        } else if container == "avi" {
            uti = "public.avi"
        } else {
            uti = "public.movie"
        }
        var facts = FileFacts(
            mediaType: .video, format: container.split(separator: ",").first.map(String.init) ?? container,
            uniformTypeIdentifier: uti)
        apply(video: asset.metadata, duration: asset.duration, track: asset.videoTrack, to: &facts)
        if container.hasPrefix("mov") {
            do {
                facts.stillImageTime = try QuickTimeParser.stillImageTime(source)
            } catch {
                facts.warnings.append("mebx: \(error.message)")
            }
        }
        return facts
    }

    /// Fields of a video from libavformat's reading (container metadata and the video track).
    static func apply(video metadata: [String: String], duration: Double, track: AssetTrack?, to facts: inout FileFacts)
    {
        facts.duration = duration
        if let size = track?.displaySize {
            facts.pixelWidth = size.width
            facts.pixelHeight = size.height
        }
        facts.frameRate = track?.frameRate?.value
        if let text = metadata["com.apple.quicktime.creationdate"], let parsed = parseQuickTimeDate(text) {
            facts.creationDate = parsed.date
            facts.creationTimeZoneOffset = parsed.offset
            facts.creationDateSource = "quicktime-creationdate"
        } else if let text = metadata["creation_time"], let parsed = parseQuickTimeDate(text) {
            facts.creationDate = parsed.date
            facts.creationDateSource = "mvhd"
        }
        if let text = metadata["com.apple.quicktime.location.ISO6709"] ?? metadata["location"],
            let location = parseISO6709(text)
        {
            facts.latitude = location.latitude
            facts.longitude = location.longitude
            facts.altitude = location.altitude
        }
        if let identifier = metadata["com.apple.quicktime.content.identifier"],
            identifier.utf8.count <= ExifParser.maxIdentifierLength, !identifier.isEmpty
        {
            facts.contentIdentifier = identifier
        }
        facts.make = metadata["com.apple.quicktime.make"] ?? metadata["make"]
        facts.model = metadata["com.apple.quicktime.model"] ?? metadata["model"]
    }

    /// `2019-07-24T11:25:40+0300`, `2019-07-24T08:25:57.000000Z`: the date, and the offset when the
    /// text carries a zone other than `Z` (`Z` from `creation_time` is libavformat's UTC rendering).
    static func parseQuickTimeDate(_ text: String) -> (date: Date, offset: Int?)? {
        for format in [
            "yyyy-MM-dd'T'HH:mm:ssZ", "yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXXXX",
            "yyyy-MM-dd'T'HH:mm:ss.SSSXXXXX", "yyyy-MM-dd HH:mm:ss",
        ] {
            guard let date = DateFormats.utcDate(text, format: format) else { continue }
            if text.hasSuffix("Z") || format == "yyyy-MM-dd HH:mm:ss" { return (date, nil) }
            let tail = String(text.suffix(5))
            if let sign = tail.first, sign == "+" || sign == "-", let hours = Int(tail.dropFirst().prefix(2)),
                let minutes = Int(tail.suffix(2))
            {
                return (date, (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60))
            }
            return (date, ExifFacts.parseOffset(String(text.suffix(6))))
        }
        return nil
    }

    /// `+32.0929+034.8620+028.516/` → latitude, longitude, altitude.
    static func parseISO6709(_ text: String) -> LibraryLocation? {
        var numbers: [Double] = []
        var current = ""
        for character in text {
            if character == "+" || character == "-" || character == "/" {
                if !current.isEmpty, let value = Double(current) { numbers.append(value) }
                current = character == "/" ? "" : String(character)
                if character == "/" { break }
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty, let value = Double(current) { numbers.append(value) }
        guard numbers.count >= 2, abs(numbers[0]) <= 90, abs(numbers[1]) <= 180 else { return nil }
        return LibraryLocation(
            latitude: numbers[0], longitude: numbers[1], altitude: numbers.count > 2 ? numbers[2] : nil)
    }
}
