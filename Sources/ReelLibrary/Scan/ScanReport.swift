import Foundation

/// What a scan did, as `PHChange` would report it: identifiers inserted, changed and removed, the
/// files it skipped and why, and the token to ask for later changes with.
public struct ScanReport: Sendable, Codable, Equatable {
    public var insertedLocalIdentifiers: [String] = []
    public var changedLocalIdentifiers: [String] = []
    public var removedLocalIdentifiers: [String] = []
    /// Files and folders this scan met and did not index, with the reason.
    public var skipped: [SkippedFile] = []
    /// Files this scan read and indexed with a note: a photo that claims a Motion Photo's video it does
    /// not have (it stays a plain photo), with the reason.
    public var notes: [SkippedFile] = []
    /// Regular files met.
    public var filesSeen = 0
    /// Files whose size and modification time had not changed (not opened).
    public var filesUnchanged = 0
    /// Files read (keyed and parsed).
    public var filesRead = 0
    /// Bytes hashed: small files whole, three 64 KiB samples of larger ones (`ContentKey`), and
    /// the files hashed whole to confirm or split a shared sampled key.
    public var bytesHashed: Int64 = 0
    /// Larger files hashed whole because another file shared their sampled key (or a vanished
    /// file keyed before sampling had their size).
    public var filesHashedWhole = 0
    public var seconds = 0.0
    public var token: LibraryChangeToken

    public init(token: LibraryChangeToken) { self.token = token }
}

/// Where a scan is, for a progress bar.
public struct ScanProgress: Sendable {
    public enum Phase: String, Sendable { case walking, reading, finishing }
    public var phase: Phase
    public var filesSeen: Int
    public var filesToRead: Int
    public var filesRead: Int
}

/// Collects identifiers as a scan touches them and reports each once, as its net effect: inserted
/// then removed in the same scan is nothing; inserted then changed is inserted; changed then
/// removed is removed.
struct ChangeTracker {
    private(set) var inserted: Set<String> = []
    private(set) var changed: Set<String> = []
    private(set) var removed: Set<String> = []

    mutating func insert(_ id: String) {
        if removed.remove(id) != nil {
            changed.insert(id)
        } else {
            inserted.insert(id)
        }
    }

    mutating func change(_ id: String) {
        if !inserted.contains(id) { changed.insert(id) }
    }

    mutating func remove(_ id: String) {
        if inserted.remove(id) != nil { return }
        changed.remove(id)
        removed.insert(id)
    }
}
