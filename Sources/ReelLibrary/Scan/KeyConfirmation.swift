import Foundation
import ReelBoxes
import ReelMedia
import ReelSystem

/// Where a sampled `ContentKey` decides something, it is confirmed with whole-file hashes, so the
/// first scan hashes a large file whole only when another file shares its sampled key:
/// - a file whose sampled key another present file has is hashed whole, and so is that file: the
///   same bytes keep the key (copies, numbered as copies); different bytes (same size, same samples,
///   another middle) file the new one under its whole-content hash, a key of its own, so the two are
///   two assets with unrelated identifiers. A copy of that file later meets the same split and lands
///   on the same whole-content key, so it is numbered as its copy.
/// - a large file that matches no vanished file by key, while a vanished file has its size, is hashed
///   whole and matched against the vanished files' keys: a library scanned before keys were sampled
///   filed large files under their whole-content hash, and a move of one keeps its identifier.
final class KeyConfirmation {
    let store: any LibraryStore
    /// Sampled-key files of the current batch (not yet in the store), by key.
    private var batch: [String: [FileRecord]] = [:]
    /// Whole-content hashes computed this scan, by path.
    private var wholeHashes: [String: String] = [:]
    /// Sizes of vanished files keyed before sampling could apply to (larger than the limit).
    var removedSizes = Set<Int64>()
    private(set) var filesHashedWhole = 0
    private(set) var bytesHashedWhole: Int64 = 0
    /// At most this many files already holding a key are compared with a new one.
    static let maxCandidates = 8

    init(store: any LibraryStore) { self.store = store }

    /// Keeps `record`'s sampled key when no other present file has it or one with it has the same
    /// bytes; otherwise re-keys `record` by its whole content.
    func confirm(_ record: inout FileRecord, removed: Set<String>, changed: Set<String>) async throws {
        let key = record.contentHash
        var candidates = (batch[key] ?? []).filter { $0.path != record.path }
        // Stored files that vanished or changed since hold a key that no longer says what is on disk.
        candidates += try await store.files(contentHash: key, limit: Self.maxCandidates + 1).filter {
            $0.path != record.path && !removed.contains($0.path) && !changed.contains($0.path)
        }
        guard !candidates.isEmpty else { return }
        guard let whole = await wholeHash(record) else {
            // Changed or unreadable since it was read: it cannot be proven a copy, so it is not filed
            // as one; its key is its path's own until the next scan re-reads it (its stamp differs).
            var hasher = ContentHasher()
            hasher.update(Array("reel-unconfirmed-key-v1\0\(key)\0\(record.path)".utf8))
            record.contentHash = hasher.finalize()
            return
        }
        var compared = Set<String>()
        for candidate in candidates where compared.insert(candidate.path).inserted {
            if compared.count > Self.maxCandidates { break }
            if await wholeHash(candidate) == whole { return }
        }
        record.contentHash = whole
    }

    /// The vanished file, keyed by its whole content before sampling, that `record` is a move of;
    /// `record` then takes that key.
    func legacyMove(of record: inout FileRecord, among removedByHash: [String: [FileRecord]], removed: Set<String>)
        async throws -> FileRecord?
    {
        guard ContentKey.isSampled(size: record.stamp.size), removedSizes.contains(record.stamp.size),
            let whole = await wholeHash(record),
            let old = removedByHash[whole]?.first(where: { removed.contains($0.path) })
        else { return nil }
        record.contentHash = whole
        return old
    }

    /// Remembers a sampled-key file of this batch for the next ones.
    func note(_ record: FileRecord) {
        guard ContentKey.isSampled(size: record.stamp.size) else { return }
        batch[record.contentHash, default: []].append(record)
    }

    /// The batch is in the store: its files are found there from now on.
    func endBatch() { batch.removeAll(keepingCapacity: true) }

    /// BLAKE2b-256 of the whole file as recorded (nil when it is no longer that size or unreadable).
    private func wholeHash(_ record: FileRecord) async -> String? {
        if let known = wholeHashes[record.path] { return known }
        let path = record.path
        let size = record.stamp.size
        let hash = await onOwnThread(named: "reel-library") { () -> String? in
            guard let source = try? FileSource(path: path, followSymlinks: false), source.count == size else {
                return nil
            }
            return ContentHasher.hash(descriptor: source.fileDescriptor, length: size)
        }
        guard let hash else { return nil }
        filesHashedWhole += 1
        bytesHashedWhole += size
        if wholeHashes.count > 10_000 { wholeHashes.removeAll() }  // bounded memory; rare anyway
        wholeHashes[path] = hash
        return hash
    }
}
