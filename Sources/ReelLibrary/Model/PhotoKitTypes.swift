/// PhotoKit's enumerations with PhotoKit's names and raw values, so a client written against
/// PhotoKit reads Reel's JSON without a table of its own (`LIVE-PHOTO-NOTES.md` §1).

/// `PHAssetMediaType`.
public enum MediaType: Int, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case unknown = 0
    case image = 1
    case video = 2
    case audio = 3

    public var description: String { "\(name)" }
    /// PhotoKit's case name.
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .image: "image"
        case .video: "video"
        case .audio: "audio"
        }
    }
}

/// `PHAssetMediaSubtype`: an option set. Reel sets a bit only where a file carries a real marker
/// for it (`photoHDR` from Apple's MakerNote, `photoLive` from a pair or a Motion Photo,
/// `videoHighFrameRate` from a nominal rate of 100 fps or more).
public struct MediaSubtypes: OptionSet, Sendable, Codable, Hashable, CustomStringConvertible {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let photoPanorama = MediaSubtypes(rawValue: 1 << 0)
    public static let photoHDR = MediaSubtypes(rawValue: 1 << 1)
    public static let photoScreenshot = MediaSubtypes(rawValue: 1 << 2)
    public static let photoLive = MediaSubtypes(rawValue: 1 << 3)
    public static let photoDepthEffect = MediaSubtypes(rawValue: 1 << 4)
    public static let videoStreamed = MediaSubtypes(rawValue: 1 << 16)
    public static let videoHighFrameRate = MediaSubtypes(rawValue: 1 << 17)
    public static let videoTimelapse = MediaSubtypes(rawValue: 1 << 18)
    public static let videoScreenRecording = MediaSubtypes(rawValue: 1 << 19)
    public static let videoCinematic = MediaSubtypes(rawValue: 1 << 21)

    /// Every named bit with PhotoKit's name.
    public static let named: [(name: String, value: MediaSubtypes)] = [
        ("photoPanorama", .photoPanorama), ("photoHDR", .photoHDR), ("photoScreenshot", .photoScreenshot),
        ("photoLive", .photoLive), ("photoDepthEffect", .photoDepthEffect), ("videoStreamed", .videoStreamed),
        ("videoHighFrameRate", .videoHighFrameRate), ("videoTimelapse", .videoTimelapse),
        ("videoScreenRecording", .videoScreenRecording), ("videoCinematic", .videoCinematic),
    ]

    /// The names of the bits set, in PhotoKit's order.
    public var names: [String] { MediaSubtypes.named.filter { contains($0.value) }.map(\.name) }
    public var description: String { names.isEmpty ? "none" : names.joined(separator: ",") }
}

/// `PHAsset.PlaybackStyle`.
public enum PlaybackStyle: Int, Sendable, Codable, CaseIterable {
    case unsupported = 0
    case image = 1
    case imageAnimated = 2
    case livePhoto = 3
    case video = 4
    case videoLooping = 5

    public var name: String {
        switch self {
        case .unsupported: "unsupported"
        case .image: "image"
        case .imageAnimated: "imageAnimated"
        case .livePhoto: "livePhoto"
        case .video: "video"
        case .videoLooping: "videoLooping"
        }
    }
}

/// `PHAssetSourceType`: every asset Reel indexes is in the user's library.
public enum AssetSourceType: Int, Sendable, Codable {
    case typeUserLibrary = 1
    case typeCloudShared = 2
    case typeiTunesSynced = 4
}

/// `PHAssetResourceType`.
public enum AssetResourceType: Int, Sendable, Codable, CaseIterable {
    case photo = 1
    case video = 2
    case audio = 3
    case alternatePhoto = 4
    case fullSizePhoto = 5
    case fullSizeVideo = 6
    case adjustmentData = 7
    case adjustmentBasePhoto = 8
    case pairedVideo = 9
    case fullSizePairedVideo = 10
    case adjustmentBasePairedVideo = 11
    case adjustmentBaseVideo = 12
    case photoProxy = 19

    /// PhotoKit's case name.
    public var name: String {
        switch self {
        case .photo: "photo"
        case .video: "video"
        case .audio: "audio"
        case .alternatePhoto: "alternatePhoto"
        case .fullSizePhoto: "fullSizePhoto"
        case .fullSizeVideo: "fullSizeVideo"
        case .adjustmentData: "adjustmentData"
        case .adjustmentBasePhoto: "adjustmentBasePhoto"
        case .pairedVideo: "pairedVideo"
        case .fullSizePairedVideo: "fullSizePairedVideo"
        case .adjustmentBasePairedVideo: "adjustmentBasePairedVideo"
        case .adjustmentBaseVideo: "adjustmentBaseVideo"
        case .photoProxy: "photoProxy"
        }
    }

    /// The type named `name` (PhotoKit's case name) or given by its raw value, if any.
    public init?(name: String) {
        if let raw = Int(name), let type = AssetResourceType(rawValue: raw) {
            self = type
            return
        }
        guard let type = AssetResourceType.allCases.first(where: { $0.name == name }) else { return nil }
        self = type
    }
}

/// Which version of a photo to render (`PHImageRequestOptionsVersion`): `current` is the edit when
/// the asset has one, `unadjusted` and `original` the photo as it was taken.
public enum AssetVersion: String, Sendable, Codable, CaseIterable {
    case current
    case unadjusted
    case original
}

/// `PHAssetCollectionType`.
public enum AssetCollectionType: Int, Sendable, Codable {
    case album = 1
    case smartAlbum = 2
    /// Deprecated in PhotoKit (moments became `PHFetchOptions` queries), kept for grouping by day and place.
    case moment = 3

    public var name: String {
        switch self {
        case .album: "album"
        case .smartAlbum: "smartAlbum"
        case .moment: "moment"
        }
    }
}

/// `PHAssetCollectionSubtype`: the ones Reel fills (others have no marker in files).
public enum AssetCollectionSubtype: Int, Sendable, Codable, CaseIterable {
    case albumRegular = 2
    /// A scanned folder, shown as an album (PhotoKit's albums synced from a computer's folders).
    case albumSyncedAlbum = 5
    case smartAlbumGeneric = 200
    case smartAlbumVideos = 202
    case smartAlbumFavorites = 203
    case smartAlbumAllHidden = 205
    case smartAlbumRecentlyAdded = 206
    case smartAlbumBursts = 207
    case smartAlbumSlomoVideos = 208
    case smartAlbumUserLibrary = 209
    case smartAlbumLivePhotos = 213
    case smartAlbumAnimated = 214

    public var name: String {
        switch self {
        case .albumRegular: "albumRegular"
        case .albumSyncedAlbum: "albumSyncedAlbum"
        case .smartAlbumGeneric: "smartAlbumGeneric"
        case .smartAlbumVideos: "smartAlbumVideos"
        case .smartAlbumFavorites: "smartAlbumFavorites"
        case .smartAlbumAllHidden: "smartAlbumAllHidden"
        case .smartAlbumRecentlyAdded: "smartAlbumRecentlyAdded"
        case .smartAlbumBursts: "smartAlbumBursts"
        case .smartAlbumSlomoVideos: "smartAlbumSlomoVideos"
        case .smartAlbumUserLibrary: "smartAlbumUserLibrary"
        case .smartAlbumLivePhotos: "smartAlbumLivePhotos"
        case .smartAlbumAnimated: "smartAlbumAnimated"
        }
    }
}
