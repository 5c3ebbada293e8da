import Foundation

/// A file as the last scan saw it: its stamp (size, modification time), its content hash and what
/// its headers said.
public struct FileRecord: Sendable, Codable, Equatable {
    /// Absolute path, symlinks not resolved (the scan never follows them).
    public var path: String
    /// The folder holding it, and its name in that folder.
    public var folder: String
    public var name: String
    public var stamp: FileStamp
    /// The file's content key, hex (`ContentKey`; confirmed by whole-file hashes where shared).
    public var contentHash: String
    public var facts: FileFacts

    public init(path: String, stamp: FileStamp, contentHash: String, facts: FileFacts) {
        self.path = path
        if PathParts.isClean(path) {
            // What URL gives for a clean path, without parsing one per file.
            self.folder = PathParts.folder(of: path)
            self.name = PathParts.name(of: path)
        } else {
            let url = URL(fileURLWithPath: path)
            self.folder = url.deletingLastPathComponent().path
            self.name = url.lastPathComponent
        }
        self.stamp = stamp
        self.contentHash = contentHash
        self.facts = facts
    }
}

/// What tells the scan a file has not changed: its size and modification time (nanoseconds).
public struct FileStamp: Sendable, Codable, Equatable, Hashable {
    public var size: Int64
    public var modifiedNanoseconds: Int64
    public init(size: Int64, modifiedNanoseconds: Int64) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
    }
}

/// An asset as a store keeps it: the PhotoKit fields, and where its paired video is when it is a
/// Live Photo made of two files (a Motion Photo's video is a range of `asset.path`, described by
/// that file's facts).
public struct StoredAsset: Sendable, Codable, Equatable {
    public var asset: LibraryAsset
    /// The Live Photo's movie, when paired.
    public var pairedVideoPath: String?
    /// The edit's files beside the original (`EditLayout`): the rendered edit (`fullSizePhoto`), the
    /// AAE property list (`adjustmentData`) and an edited Live Photo's movie (`fullSizePairedVideo`).
    public var fullSizePhotoPath: String?
    public var adjustmentDataPath: String?
    public var fullSizePairedVideoPath: String?

    public init(
        asset: LibraryAsset, pairedVideoPath: String? = nil, fullSizePhotoPath: String? = nil,
        adjustmentDataPath: String? = nil, fullSizePairedVideoPath: String? = nil
    ) {
        self.asset = asset
        self.pairedVideoPath = pairedVideoPath
        self.fullSizePhotoPath = fullSizePhotoPath
        self.adjustmentDataPath = adjustmentDataPath
        self.fullSizePairedVideoPath = fullSizePairedVideoPath
    }

    /// Forgets the edit (its files are then no asset's).
    public mutating func clearEdit() {
        fullSizePhotoPath = nil
        adjustmentDataPath = nil
        fullSizePairedVideoPath = nil
        asset.hasAdjustments = false
    }

    /// The edit's files that are set, in resource order.
    public var editPaths: [String] {
        [fullSizePhotoPath, adjustmentDataPath, fullSizePairedVideoPath].compactMap { $0 }
    }
}

/// A file the scan met and did not index, with the reason (a FIFO, a symlink, a file over the
/// input limits, a header that could not be read).
public struct SkippedFile: Error, Sendable, Codable, Equatable {
    public var path: String
    public var reason: String
    /// The regular file's size and modification time when it was refused: unchanged, it is not read
    /// again by the next scan.
    public var stamp: FileStamp?
    public init(path: String, reason: String, stamp: FileStamp? = nil) {
        self.path = path
        self.reason = reason
        self.stamp = stamp
    }
}

/// A user album.
public struct AlbumRecord: Sendable, Codable, Equatable {
    /// `album:` and a UUID, stable.
    public var identifier: String
    public var title: String
    public var assetCount: Int
    public init(identifier: String, title: String, assetCount: Int = 0) {
        self.identifier = identifier
        self.title = title
        self.assetCount = assetCount
    }
}

/// One write a store applies; a batch of them is applied in one transaction (`LibraryStore.apply`).
public enum LibraryOperation: Sendable {
    /// Records a file (replacing the record at its path).
    case putFile(FileRecord)
    /// Forgets the file at `path`.
    case removeFile(path: String)
    /// Adds an asset. Its `localIdentifier` is ignored: the store assigns the content's identifier
    /// with the smallest copy number no live asset of that content uses (`UUID/L0/001`, then `002`…).
    case insertAsset(StoredAsset)
    /// Replaces an asset's fields (by `localIdentifier`), keeping the library's own state:
    /// `isFavorite`, `isHidden`, `addedDate`.
    case updateAsset(StoredAsset)
    /// Deletes an asset (and its album memberships); `changes(since:)` reports it as deleted.
    case deleteAsset(localIdentifier: String)
    case setFavorite(localIdentifier: String, Bool)
    case setHidden(localIdentifier: String, Bool)
    /// Records why `path` was not indexed (replacing an earlier reason).
    case recordSkip(SkippedFile)
    /// Forgets the skip recorded for `path`.
    case clearSkip(path: String)
    case createAlbum(identifier: String, title: String)
    case renameAlbum(identifier: String, title: String)
    case deleteAlbum(identifier: String)
    case addToAlbum(identifier: String, localIdentifiers: [String])
    case removeFromAlbum(identifier: String, localIdentifiers: [String])
}

/// What changed since a token (`PHPersistentChangeToken`): identifiers inserted, updated and
/// deleted, and the token to ask with next time.
public struct LibraryChanges: Sendable, Codable, Equatable {
    public var insertedLocalIdentifiers: [String]
    public var updatedLocalIdentifiers: [String]
    public var deletedLocalIdentifiers: [String]
    public var token: LibraryChangeToken

    public init(inserted: [String], updated: [String], deleted: [String], token: LibraryChangeToken) {
        insertedLocalIdentifiers = inserted
        updatedLocalIdentifiers = updated
        deletedLocalIdentifiers = deleted
        self.token = token
    }
}

/// A point in a library's history, persistent across processes: the library's own identity and a
/// change number. A token from another library is refused rather than misread.
public struct LibraryChangeToken: Sendable, Codable, Equatable, CustomStringConvertible {
    public var library: String
    public var sequence: Int64

    public init(library: String, sequence: Int64) {
        self.library = library
        self.sequence = sequence
    }

    /// `<library>:<sequence>`: the one shape the CLI prints (as text and in JSON) and takes.
    public var description: String { "\(library):\(sequence)" }

    /// Parses `description`'s form, or the JSON object `{"library":…,"sequence":…}` that 0.2's
    /// `scan --json` printed; nil when malformed.
    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            struct Object: Decodable {
                var library: String
                var sequence: Int64
            }
            guard let object = try? JSONDecoder().decode(Object.self, from: Data(trimmed.utf8)) else { return nil }
            self.init(checkedLibrary: object.library, sequence: object.sequence)
            return
        }
        guard let colon = trimmed.lastIndex(of: ":"), let sequence = Int64(trimmed[trimmed.index(after: colon)...])
        else { return nil }
        self.init(checkedLibrary: String(trimmed[..<colon]), sequence: sequence)
    }

    private init?(checkedLibrary library: String, sequence: Int64) {
        guard !library.isEmpty, sequence >= 0 else { return nil }
        self.init(library: library, sequence: sequence)
    }

    /// Encoded as its one string, so a scan report's token is what `changes --since` takes.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let token = LibraryChangeToken(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text)' is not a change token (<library>:<number>)")
        }
        self = token
    }
}

/// A folder and how many assets' primary files it holds.
public struct FolderCount: Sendable, Codable, Equatable {
    public var folder: String
    public var count: Int
    public init(folder: String, count: Int) {
        self.folder = folder
        self.count = count
    }
}
