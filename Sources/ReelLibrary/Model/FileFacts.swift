import Foundation

/// What one file says about itself, read from its headers (never its pixels): the raw material of an
/// asset's PhotoKit fields, kept per file so a rescan can rebuild assets without reading files again.
public struct FileFacts: Sendable, Codable, Equatable {
    /// Image or video; unknown only for an edit's AAE file (other files are skipped, not indexed).
    public var mediaType: MediaType
    /// The container as sniffed from the bytes: `jpeg`, `heic`, `png`, `gif`, or FFmpeg's demuxer name.
    public var format: String
    /// The uniform type identifier (`public.jpeg`, `public.heic`, `com.apple.quicktime-movie`).
    public var uniformTypeIdentifier: String
    /// Size as displayed: the orientation (Exif, `irot`, the display matrix) applied.
    public var pixelWidth: Int?
    public var pixelHeight: Int?
    /// Seconds (videos, and animated images when known).
    public var duration: Double?
    /// Nominal frames per second of the video track.
    public var frameRate: Double?
    /// When it was captured, and the offset from UTC the camera recorded (seconds), if it did.
    public var creationDate: Date?
    public var creationTimeZoneOffset: Int?
    /// Which field gave `creationDate` (`exif`, `quicktime-creationdate`, `mvhd`, `xmp`).
    public var creationDateSource: String?
    public var latitude: Double?
    public var longitude: Double?
    public var altitude: Double?
    /// The Live Photo content identifier (MakerNote 0x0011, or QuickTime's content.identifier).
    public var contentIdentifier: String?
    /// Apple MakerNote 0x000B.
    public var burstIdentifier: String?
    /// Apple MakerNote 0x000A = 3.
    public var isHDR: Bool = false
    /// An animated GIF or PNG.
    public var isAnimated: Bool = false
    /// When the movie's still was taken, from its `mebx` still-image-time track (seconds).
    public var stillImageTime: Double?
    /// The embedded video of a Motion Photo, validated.
    public var motionPhoto: MotionPhotoVideo?
    /// Why a file that claims to be a Motion Photo is treated as a plain photo.
    public var motionPhotoRejection: String?
    public var make: String?
    public var model: String?
    /// Things read wrongly but survivable (a bad MakerNote, an XMP packet cut short).
    public var warnings: [String] = []
    /// What an AAE file (an edit's adjustment data, `IMG_1234.AAE`) says, when it could be read; such a
    /// file's `mediaType` is unknown and it is never an asset of its own.
    public var adjustment: AdjustmentInfo?

    public init(mediaType: MediaType, format: String, uniformTypeIdentifier: String) {
        self.mediaType = mediaType
        self.format = format
        self.uniformTypeIdentifier = uniformTypeIdentifier
    }
}

/// Where a Motion Photo keeps its video: a byte range of the photo's own file.
public struct MotionPhotoVideo: Sendable, Codable, Equatable {
    /// Which marker named the range.
    public enum Source: String, Sendable, Codable {
        /// Google Motion Photo 1.0: XMP `Container:Directory`.
        case containerDirectory
        /// Legacy `GCamera:MicroVideoOffset`.
        case microVideoOffset
        /// Samsung HEIC: a top-level `mpvd` box.
        case samsungMPVD
    }
    public var source: Source
    /// First byte of the MP4 in the file, and its length.
    public var offset: Int64
    public var length: Int64
    /// Microseconds into the video the still was taken (nil when unspecified: −1 in the XMP).
    public var presentationTimestampMicroseconds: Int64?
    /// Seconds, as libavformat reads the range.
    public var duration: Double?
    /// The still alone is the file's first `stillLength` bytes (a JPEG ends where its video begins; a
    /// HEIC whose `mpvd` box is its last ends where that box begins); nil when the still is not one
    /// range of the file (an `mpvd` box followed by other boxes), so the whole file stands for it.
    public var stillLength: Int64?

    public init(
        source: Source, offset: Int64, length: Int64, presentationTimestampMicroseconds: Int64? = nil,
        stillLength: Int64? = nil
    ) {
        self.source = source
        self.offset = offset
        self.length = length
        self.presentationTimestampMicroseconds = presentationTimestampMicroseconds
        self.stillLength = stillLength
    }
}
