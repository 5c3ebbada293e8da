import Foundation

/// Where an asset was captured (`CLLocation`'s coordinate and altitude).
public struct LibraryLocation: Sendable, Codable, Equatable {
    public var latitude: Double
    public var longitude: Double
    public var altitude: Double?

    public init(latitude: Double, longitude: Double, altitude: Double? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
    }

    /// ISO 6709 (`+48.8584+002.2945+035.000/`), as QuickTime writes locations.
    public var iso6709: String {
        func part(_ value: Double, _ width: Int) -> String {
            let sign = value < 0 ? "-" : "+"
            let text = String(format: "%0\(width + 5).4f", abs(value))
            return sign + text
        }
        var text = part(latitude, 2) + part(longitude, 3)
        if let altitude { text += (altitude < 0 ? "-" : "+") + String(format: "%.3f", abs(altitude)) }
        return text + "/"
    }
}

/// How a Live Photo's two halves were linked.
public enum PairingKind: String, Sendable, Codable {
    /// The still's MakerNote 0x0011 and the movie's `com.apple.quicktime.content.identifier` agree.
    case contentIdentifier
    /// No identifiers: same folder and stem, a movie of at most 5 s, capture times close. A guess,
    /// and said to be one.
    case inferred
    /// A Motion Photo: the video is a byte range of the photo's own file.
    case motionPhoto
    /// Paired by hand: a still and a movie imported together as one Live Photo (`reel library import
    /// --live`, `PhotoLibrary.importLivePhoto`), whatever their identifiers, names or times say. The
    /// asset's record is the pairing: a rescan keeps it while both files are there.
    case imported
}

/// An asset of the library, with PhotoKit's field names and raw values (`PHAsset`), plus where its
/// bytes are. A Live Photo's movie is not an asset: it is this asset's `pairedVideo` resource.
public struct LibraryAsset: Sendable, Codable, Equatable, Identifiable {
    /// Stable across rescans, renames and moves: derived from the content's hash (`UUID/L0/001`;
    /// identical copies are `…/L0/002` and on).
    public var localIdentifier: String
    public var mediaType: MediaType
    public var mediaSubtypes: MediaSubtypes
    public var pixelWidth: Int
    public var pixelHeight: Int
    /// Seconds; 0 for a still.
    public var duration: Double
    public var creationDate: Date?
    /// Seconds east of UTC that the camera recorded with `creationDate`, when it did.
    public var creationTimeZoneOffset: Int?
    /// When the file was last modified.
    public var modificationDate: Date
    public var location: LibraryLocation?
    public var isFavorite: Bool
    public var isHidden: Bool
    public var burstIdentifier: String?
    /// Whether this asset is its burst's representative (the first by capture time), as PhotoKit's
    /// `representsBurst`: false for every asset outside a burst.
    public var representsBurst: Bool
    public var playbackStyle: PlaybackStyle
    public var sourceType: AssetSourceType
    /// The primary file's name.
    public var originalFilename: String
    /// The Live Photo content identifier, when the file has one.
    public var contentIdentifier: String?
    /// How a Live or Motion Photo's motion was found, when it has one.
    public var pairing: PairingKind?
    /// Seconds into the paired video where the still was taken (the `mebx` still-image-time track, or
    /// the Motion Photo's presentation timestamp).
    public var stillImageTime: Double?
    /// The primary file's content key, hex (`ContentKey`: BLAKE2b-256 of its bytes up to 192 KiB,
    /// else of its size and three 64 KiB samples; shared only by files with the same bytes).
    public var contentHash: String
    /// The primary file's path.
    public var path: String
    /// When the library first saw it.
    public var addedDate: Date
    /// Whether the asset has an edit (PhotoKit's `hasAdjustments`): a rendered edit beside its original
    /// (`IMG_E1234.HEIC` or `.JPG` beside `IMG_1234.HEIC`), its `fullSizePhoto` resource.
    public var hasAdjustments: Bool

    public var id: String { localIdentifier }

    public init(
        localIdentifier: String, mediaType: MediaType, mediaSubtypes: MediaSubtypes = [], pixelWidth: Int = 0,
        pixelHeight: Int = 0, duration: Double = 0, creationDate: Date? = nil, creationTimeZoneOffset: Int? = nil,
        modificationDate: Date, location: LibraryLocation? = nil, isFavorite: Bool = false, isHidden: Bool = false,
        burstIdentifier: String? = nil, representsBurst: Bool = false, playbackStyle: PlaybackStyle,
        sourceType: AssetSourceType = .typeUserLibrary, originalFilename: String, contentIdentifier: String? = nil,
        pairing: PairingKind? = nil, stillImageTime: Double? = nil, contentHash: String, path: String, addedDate: Date,
        hasAdjustments: Bool = false
    ) {
        self.localIdentifier = localIdentifier
        self.mediaType = mediaType
        self.mediaSubtypes = mediaSubtypes
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.duration = duration
        self.creationDate = creationDate
        self.creationTimeZoneOffset = creationTimeZoneOffset
        self.modificationDate = modificationDate
        self.location = location
        self.isFavorite = isFavorite
        self.isHidden = isHidden
        self.burstIdentifier = burstIdentifier
        self.representsBurst = representsBurst
        self.playbackStyle = playbackStyle
        self.sourceType = sourceType
        self.originalFilename = originalFilename
        self.contentIdentifier = contentIdentifier
        self.pairing = pairing
        self.stillImageTime = stillImageTime
        self.contentHash = contentHash
        self.path = path
        self.addedDate = addedDate
        self.hasAdjustments = hasAdjustments
    }

    private enum CodingKeys: String, CodingKey {
        case localIdentifier, mediaType, mediaSubtypes, pixelWidth, pixelHeight, duration, creationDate
        case creationTimeZoneOffset, modificationDate, location, isFavorite, isHidden, burstIdentifier
        case representsBurst, playbackStyle, sourceType, originalFilename, contentIdentifier, pairing
        case stillImageTime, contentHash, path, addedDate, hasAdjustments
    }

    /// Decodes an asset; JSON written before `hasAdjustments` existed reads as false.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        localIdentifier = try c.decode(String.self, forKey: .localIdentifier)
        mediaType = try c.decode(MediaType.self, forKey: .mediaType)
        mediaSubtypes = try c.decode(MediaSubtypes.self, forKey: .mediaSubtypes)
        pixelWidth = try c.decode(Int.self, forKey: .pixelWidth)
        pixelHeight = try c.decode(Int.self, forKey: .pixelHeight)
        duration = try c.decode(Double.self, forKey: .duration)
        creationDate = try c.decodeIfPresent(Date.self, forKey: .creationDate)
        creationTimeZoneOffset = try c.decodeIfPresent(Int.self, forKey: .creationTimeZoneOffset)
        modificationDate = try c.decode(Date.self, forKey: .modificationDate)
        location = try c.decodeIfPresent(LibraryLocation.self, forKey: .location)
        isFavorite = try c.decode(Bool.self, forKey: .isFavorite)
        isHidden = try c.decode(Bool.self, forKey: .isHidden)
        burstIdentifier = try c.decodeIfPresent(String.self, forKey: .burstIdentifier)
        representsBurst = try c.decode(Bool.self, forKey: .representsBurst)
        playbackStyle = try c.decode(PlaybackStyle.self, forKey: .playbackStyle)
        sourceType = try c.decode(AssetSourceType.self, forKey: .sourceType)
        originalFilename = try c.decode(String.self, forKey: .originalFilename)
        contentIdentifier = try c.decodeIfPresent(String.self, forKey: .contentIdentifier)
        pairing = try c.decodeIfPresent(PairingKind.self, forKey: .pairing)
        stillImageTime = try c.decodeIfPresent(Double.self, forKey: .stillImageTime)
        contentHash = try c.decode(String.self, forKey: .contentHash)
        path = try c.decode(String.self, forKey: .path)
        addedDate = try c.decode(Date.self, forKey: .addedDate)
        hasAdjustments = try c.decodeIfPresent(Bool.self, forKey: .hasAdjustments) ?? false
    }
}

/// A resource of an asset (`PHAssetResource`): a whole file, or a byte range of one (a Motion
/// Photo's video).
public struct AssetResource: Sendable, Codable, Equatable {
    public var type: AssetResourceType
    public var assetLocalIdentifier: String
    public var uniformTypeIdentifier: String
    public var originalFilename: String
    /// The file holding the bytes.
    public var path: String
    /// Where the bytes are in `path` (the whole file when the offset is 0 and the length its size).
    public var offset: Int64
    public var length: Int64
    /// The scan's content key of the resource's file, hex, when the resource is the whole file
    /// (`ContentKey`: BLAKE2b-256 of the bytes for files up to 192 KiB and where a shared sampled
    /// key was split, else of the size and three 64 KiB samples).
    public var contentHash: String?

    public init(
        type: AssetResourceType, assetLocalIdentifier: String, uniformTypeIdentifier: String, originalFilename: String,
        path: String, offset: Int64, length: Int64, contentHash: String?, isByteRange: Bool? = nil
    ) {
        self.type = type
        self.assetLocalIdentifier = assetLocalIdentifier
        self.uniformTypeIdentifier = uniformTypeIdentifier
        self.originalFilename = originalFilename
        self.path = path
        self.offset = offset
        self.length = length
        self.contentHash = contentHash
        self.isByteRange = isByteRange ?? (offset != 0)
    }

    /// Whether the resource is part of a larger file: a Motion Photo's embedded video, or its still
    /// (the file's first bytes, up to where the video begins).
    public var isByteRange: Bool
}
