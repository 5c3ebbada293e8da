import Foundation

/// What an export needs of a photo library (ReelLibrary's `PhotoLibrary` is one): to turn a
/// `library:<localIdentifier>` input into the file, or the bytes of a file, it names, and to save a
/// finished output back as a new asset. ReelExport and ReelQueue know only this protocol, so neither
/// links the library's store; the `reel` command wires the library in.
public protocol AssetLibrary: Sendable {
    /// The resource of asset `identifier` an export reads: `resource` names a PhotoKit resource type
    /// (`pairedVideo`, `video`, `photo`, …); nil picks the motion of a Live or Motion Photo, else the
    /// asset's own. The file must be as the library indexed it. Throws `unknown-asset` (no such asset
    /// or resource), `asset-changed` (its file changed or vanished since it was indexed), or
    /// `internal` when the library cannot be read.
    func resolve(_ identifier: String, resource: String?) async throws(ExportError) -> LibrarySource

    /// Adds the finished file at `path` to the library as a new asset (`PHAssetCreationRequest`) and
    /// returns its local identifier. Idempotent: saving the same file again (same path and bytes)
    /// returns the same identifier and adds nothing. Throws `save-failed` (retryable) or
    /// `unreadable-input` when the file is not one the library can index.
    func saveOutput(at path: String, from source: LibrarySource?) async throws(ExportError) -> String
}

/// `library:<localIdentifier>`: an input named by a library's identifier instead of a path, wherever
/// a path goes (`reel export`, `reel submit`, a manifest's `asset`).
public enum LibraryReference {
    /// The prefix that marks an identifier.
    public static let scheme = "library:"

    /// The identifier in `text` when it is a library reference (`library:ABC…/L0/001`), else nil.
    public static func identifier(in text: String) -> String? {
        guard text.hasPrefix(scheme) else { return nil }
        let identifier = String(text.dropFirst(scheme.count))
        return identifier.isEmpty ? nil : identifier
    }
}

/// What a `library:<id>` input resolved to: recorded with a job at submit, checked again when it
/// runs, and the facts a save back carries to the new asset.
public struct LibrarySource: Sendable, Codable, Equatable {
    /// The asset's local identifier.
    public var identifier: String
    /// The PhotoKit resource type read (`pairedVideo`, `video`, …).
    public var resource: String
    /// The file holding the bytes.
    public var path: String
    /// The bytes of `path` the media occupies (a Motion Photo's embedded video, read in place); nil
    /// for the whole file.
    public var byteRange: ByteRange?
    /// The file's size and modification time (nanoseconds since 1970) when the library indexed it.
    public var fileBytes: Int64
    public var modifiedNanoseconds: Int64
    /// The library's content key of the file as indexed, hex, when known (BLAKE2b-256 of the whole
    /// file up to 192 KiB, else of its size and three 64 KiB samples; ReelLibrary's `ContentKey`).
    public var contentHash: String?
    /// When the moment was captured, ISO 8601 with the camera's offset when it recorded one
    /// (`2024-05-01T12:00:00+02:00`), as QuickTime's `com.apple.quicktime.creationdate` holds it.
    public var creationDate: String?
    /// Where, ISO 6709 (`+48.8584+002.2945/`).
    public var location: String?
    /// The Live Photo's content identifier, when it has one.
    public var contentIdentifier: String?
    /// The resource's original file name (`IMG_1234.MOV`; a Motion Photo's video `PXL_0001.MP4`).
    public var originalFilename: String?
    /// Seconds into this video at which its Live or Motion Photo's still was taken (an iPhone movie's
    /// `com.apple.quicktime.still-image-time`, a Motion Photo's presentation timestamp); nil for any
    /// other resource. Posters and thumbnails of the asset are taken there (`ThumbnailTimes.Instant.still`).
    public var stillImageTime: Double?

    public init(
        identifier: String, resource: String, path: String, byteRange: ByteRange? = nil, fileBytes: Int64,
        modifiedNanoseconds: Int64, contentHash: String? = nil, creationDate: String? = nil, location: String? = nil,
        contentIdentifier: String? = nil, originalFilename: String? = nil, stillImageTime: Double? = nil
    ) {
        self.originalFilename = originalFilename
        self.stillImageTime = stillImageTime
        self.identifier = identifier
        self.resource = resource
        self.path = path
        self.byteRange = byteRange
        self.fileBytes = fileBytes
        self.modifiedNanoseconds = modifiedNanoseconds
        self.contentHash = contentHash
        self.creationDate = creationDate
        self.location = location
        self.contentIdentifier = contentIdentifier
    }

    /// The resource's own file name without its extension, for naming outputs (`PXL_0001` for a
    /// Motion Photo's embedded video, `IMG_1234` for a Live Photo's movie).
    public var outputStem: String {
        ((originalFilename ?? (path as NSString).lastPathComponent) as NSString).deletingPathExtension
    }

    /// `library:<identifier>`, as it was asked for.
    public var reference: String { LibraryReference.scheme + identifier }

    /// Throws `asset-changed` (not retryable), naming the identifier, unless the file at `path` is
    /// still a regular file of the recorded size and modification time.
    public func checkUnchanged() throws(ExportError) {
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw changed("\(path) is gone")
        }
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        guard Int64(status.st_size) == fileBytes, modified == modifiedNanoseconds else {
            throw changed("\(path) changed since it was indexed")
        }
    }

    /// Whether `other` names the same bytes: the same file, range, size and modification time.
    public func sameBytes(as other: LibrarySource) -> Bool {
        path == other.path && byteRange == other.byteRange && fileBytes == other.fileBytes
            && modifiedNanoseconds == other.modifiedNanoseconds
    }

    /// The `asset-changed` error for this source, with `detail` saying what happened.
    public func changed(_ detail: String) -> ExportError {
        ExportError(
            .assetChanged, "\(reference) (\(resource)): \(detail); rescan the library and submit again",
            retryable: false)
    }

    /// Container metadata an export of this source writes over the file's own (`ExportSession
    /// .metadataOverrides`): the capture date and place the library knows (a Motion Photo's come from
    /// its still's Exif, which its embedded MP4 lacks). `saving` a new asset: the content identifier
    /// is kept only with `keepContentIdentifier` (otherwise removed, so the copy never pairs with the
    /// original's still).
    public func metadata(saving: Bool, keepContentIdentifier: Bool) -> [String: String] {
        var keys: [String: String] = [:]
        if let creationDate { keys["com.apple.quicktime.creationdate"] = creationDate }
        if let location { keys["com.apple.quicktime.location.ISO6709"] = location }
        if saving {
            keys["com.apple.quicktime.content.identifier"] = keepContentIdentifier ? (contentIdentifier ?? "") : ""
        }
        return keys
    }
}
