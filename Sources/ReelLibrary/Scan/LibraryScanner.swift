import Foundation
import ReelBoxes
import ReelExport
import ReelMedia
import ReelSystem
import Synchronization

/// Indexes folders into a library: walks them without following links, reads only new or changed
/// files (size and modification time decide), keys their content (`ContentKey`: whole when small,
/// else from three 64 KiB samples, confirmed by whole-file hashes only where two files share a
/// sampled key), parses their headers, pairs Live Photos, and writes files and assets in batches,
/// one transaction each.
///
/// Identity follows content: a file that moved or was renamed (its bytes seen again at a new path
/// while its old path vanished) keeps its asset and identifier; identical copies are separate
/// assets (`…/L0/002`). A file that cannot be read, or is not a photo or video, is recorded with
/// the reason and skipped; nothing in one file stops the scan.
public struct LibraryScanner: Sendable {
    /// Files read in one scan from which the store's statistics are refreshed at its end.
    static let filesBeforeStatistics = 1_000
    public let store: any LibraryStore
    /// The limits exports obey: allowed roots, file size; videos also duration, size and streams.
    public var limits: InputLimits
    /// Paths never indexed (the library's own database files).
    public var ignoredPaths: Set<String>
    /// Files read at once.
    public var threads: Int
    /// Files per batch (one transaction). 512 by default: each commit rewrites the index pages the
    /// batch touched, and at 128 the commits were about 10 % of a 20,000-file first scan's CPU (perf),
    /// 5 % at 512; a batch's records are a few MB at most.
    public var batchSize: Int

    public init(
        store: any LibraryStore, limits: InputLimits = Asset.defaultLimits, ignoredPaths: Set<String> = [],
        threads: Int = ProcessInfo.processInfo.activeProcessorCount, batchSize: Int = 512
    ) {
        self.store = store
        self.limits = limits
        self.ignoredPaths = ignoredPaths
        self.threads = max(1, threads)
        self.batchSize = max(1, batchSize)
    }

    /// Scans `roots` (folders). Throws `LibraryError` when a root is not a folder or lies outside
    /// the allowed roots, or when the store fails; a file's own problems never throw.
    public func scan(_ roots: [String], progress: (@Sendable (ScanProgress) -> Void)? = nil) async throws -> ScanReport
    {
        let started = Date()
        let state = ScanState(store: store, addedDate: started)
        var resolvedRoots: [String] = []
        for root in roots { resolvedRoots.append(try resolveRoot(root)) }
        var previousSkips: [String: SkippedFile] = [:]
        for root in resolvedRoots {
            for skip in try await store.skippedFiles(under: root) { previousSkips[skip.path] = skip }
        }

        // 1. Walk: what is new, changed, gone.
        var pending: [WalkedFile] = []
        var changedPaths = Set<String>()
        var removed: [String] = []
        var skipped: [SkippedFile] = []
        var seen = 0
        var unchanged = 0
        for root in resolvedRoots {
            var stack = [root]
            var visited = Set<String>()
            while let folder = stack.popLast() {
                visited.insert(folder)
                let ignored = ignoredPaths
                let listing = await onOwnThread(named: "reel-library") { FileWalker.list(folder, ignoring: ignored) }
                let entries: FileWalker.Listing
                switch listing {
                case .failure(let skip):
                    skipped.append(skip)
                    continue
                case .success(let found): entries = found
                }
                let known = try await store.fileStamps(inFolder: folder)
                var present = Set<String>()
                for file in entries.files {
                    seen += 1
                    if file.stamp.size == 0 {
                        skipped.append(SkippedFile(path: file.path, reason: "empty"))
                        continue
                    }
                    if file.stamp.size > limits.maxFileBytes {
                        skipped.append(
                            SkippedFile(
                                path: file.path,
                                reason: "\(file.stamp.size) bytes, over the limit of \(limits.maxFileBytes)"))
                        continue
                    }
                    present.insert(file.name)
                    // A file refused before and unchanged since is not read again.
                    if known[file.name] == nil, let skip = previousSkips[file.path], skip.stamp == file.stamp {
                        skipped.append(skip)
                        continue
                    }
                    if let stamp = known[file.name] {
                        if stamp == file.stamp {
                            unchanged += 1
                        } else {
                            pending.append(file)
                            changedPaths.insert(file.path)
                        }
                    } else {
                        pending.append(file)
                    }
                }
                for name in known.keys where !present.contains(name) { removed.append(folder + "/" + name) }
                state.walkedFolders.insert(folder)
                let edits = EditLayout.Listing(names: Array(present))
                if !edits.isEmpty { state.editListings[folder] = edits }
                skipped += entries.skipped
                stack += entries.folders.reversed()
                progress?(ScanProgress(phase: .walking, filesSeen: seen, filesToRead: pending.count, filesRead: 0))
            }
            for folder in try await store.folders(under: root) where !visited.contains(folder) {
                removed += try await store.fileStamps(inFolder: folder).keys.map { folder + "/" + $0 }
            }
        }

        // 2. Files an interrupted scan left without an asset are finished first.
        let busy = Set(removed).union(pending.map(\.path))
        let unowned = try await store.unownedFiles(limit: 10_000).filter { !busy.contains($0.path) }
        for path in removed + pending.map(\.path) + unowned.map(\.path) { state.noteEdit(path) }
        if !unowned.isEmpty { try await state.resolve(new: unowned, changed: [], moved: []) }

        // 3. Read new and changed files in batches; moves are found by content among the removed.
        var removedByHash: [String: [FileRecord]] = [:]
        var removedSet = Set(removed)
        for start in stride(from: 0, to: removed.count, by: 500) {
            for file in try await store.files(atPaths: Array(removed[start..<min(removed.count, start + 500)])) {
                removedByHash[file.contentHash, default: []].append(file)
            }
        }
        var read = 0
        var notes: [SkippedFile] = []
        var bytes: Int64 = 0
        let keys = KeyConfirmation(store: store)
        keys.removedSizes = Set(
            removedByHash.values.joined().map(\.stamp.size).filter { ContentKey.isSampled(size: $0) })
        // The next batch is read while this one is written: reading is the readers' threads', writing
        // and pairing the store's, so one waits for the other only when it is the slower.
        let limits = limits
        let threads = threads
        let pendingFiles = pending
        let batchSize = batchSize
        func reading(_ start: Int) -> Task<[Result<FileRecord, SkippedFile>], Never>? {
            guard start < pendingFiles.count else { return nil }
            let batch = Array(pendingFiles[start..<min(pendingFiles.count, start + batchSize)])
            return Task {
                await onOwnThread(named: "reel-library") {
                    LibraryScanner.read(batch, limits: limits, threads: threads)
                }
            }
        }
        var nextBatch = reading(0)
        for start in stride(from: 0, to: pending.count, by: batchSize) {
            guard let results = await nextBatch?.value else { break }
            nextBatch = reading(start + batchSize)
            var new: [FileRecord] = []
            var changed: [FileRecord] = []
            var moved: [(FileRecord, FileRecord)] = []
            var skips: [LibraryOperation] = []
            for var result in results {
                if case .success(var record) = result, ContentKey.isSampled(size: record.stamp.size) {
                    try await keys.confirm(&record, removed: removedSet, changed: changedPaths)
                    result = .success(record)
                }
                switch result {
                case .failure(let skip):
                    skipped.append(skip)
                    skips.append(.recordSkip(skip))
                    // A known file that can no longer be read leaves the library.
                    if changedPaths.contains(skip.path) {
                        removedSet.insert(skip.path)
                        removed.append(skip.path)
                    }
                case .success(var record):
                    read += 1
                    if let rejection = record.facts.motionPhotoRejection {
                        notes.append(SkippedFile(path: record.path, reason: "not a Motion Photo: \(rejection)"))
                    }
                    if record.facts.mediaType == .unknown {
                        notes += record.facts.warnings.map { SkippedFile(path: record.path, reason: $0) }
                    }
                    bytes +=
                        ContentKey.isSampled(size: record.stamp.size) ? 3 * ContentKey.sampleBytes : record.stamp.size
                    keys.note(record)
                    if changedPaths.contains(record.path) {
                        changed.append(record)
                    } else if var candidates = removedByHash[record.contentHash], !candidates.isEmpty {
                        let old = candidates.removeFirst()
                        removedByHash[record.contentHash] = candidates
                        removedSet.remove(old.path)
                        moved.append((record, old))
                    } else if let old = try await keys.legacyMove(
                        of: &record, among: removedByHash, removed: removedSet)
                    {
                        // Indexed before sampled keys, under its whole-content hash: it keeps that key.
                        removedByHash[old.contentHash]?.removeAll { $0.path == old.path }
                        removedSet.remove(old.path)
                        moved.append((record, old))
                    } else {
                        new.append(record)
                    }
                }
            }
            if !skips.isEmpty { try await store.apply(skips) }
            try await state.resolve(new: new, changed: changed, moved: moved)
            keys.endBatch()
            progress?(ScanProgress(phase: .reading, filesSeen: seen, filesToRead: pending.count, filesRead: read))
        }

        // 4. What is gone.
        progress?(ScanProgress(phase: .finishing, filesSeen: seen, filesToRead: pending.count, filesRead: read))
        try await state.remove(removed.filter { removedSet.contains($0) })
        try await state.reconcileEdits()

        // 5. Skips: record this scan's, forget those that no longer apply.
        let skippedNow = Set(skipped.map(\.path))
        var skipOperations: [LibraryOperation] = skipped.map { .recordSkip($0) }
        skipOperations += Set(previousSkips.keys).subtracting(skippedNow).sorted().map { .clearSkip(path: $0) }
        for start in stride(from: 0, to: skipOperations.count, by: 1_000) {
            try await store.apply(Array(skipOperations[start..<min(skipOperations.count, start + 1_000)]))
        }

        // After a large scan the planner's statistics are refreshed (`ANALYZE`), so lookups by path,
        // key and identifier keep their indexes as the tables grow.
        if read >= Self.filesBeforeStatistics { try await store.refreshStatistics() }

        var report = ScanReport(token: try await store.currentChangeToken())
        report.insertedLocalIdentifiers = state.tracker.inserted.sorted()
        report.changedLocalIdentifiers = state.tracker.changed.sorted()
        report.removedLocalIdentifiers = state.tracker.removed.sorted()
        report.skipped = skipped.sorted { $0.path < $1.path }
        report.notes = notes.sorted { $0.path < $1.path }
        report.filesSeen = seen
        report.filesUnchanged = unchanged
        report.filesRead = read
        report.bytesHashed = bytes + keys.bytesHashedWhole
        report.filesHashedWhole = keys.filesHashedWhole
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// The folder `root` resolved (symlinks in the root itself are resolved once, here), checked to
    /// be a folder inside the allowed roots.
    func resolveRoot(_ root: String) throws(LibraryError) -> String {
        guard let real = realpath(root, nil) else {
            throw LibraryError(.invalidArgument, "cannot scan \(root): \(String(cString: strerror(errno)))")
        }
        let resolved = String(cString: real)
        free(real)
        var status = stat()
        guard stat(resolved, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw LibraryError(.invalidArgument, "cannot scan \(root): not a folder")
        }
        if !limits.allowedRoots.isEmpty {
            let inside = limits.allowedRoots.contains { allowed in
                guard let realAllowed = realpath(allowed, nil) else { return false }
                defer { free(realAllowed) }
                let folder = String(cString: realAllowed)
                return resolved == folder || resolved.hasPrefix(folder == "/" ? "/" : folder + "/")
            }
            guard inside else {
                throw LibraryError(
                    .invalidArgument,
                    "\(root) is outside the allowed folders (\(limits.allowedRoots.joined(separator: ":")))")
            }
        }
        return resolved
    }

    /// Keys and parses `files` on up to `threads` threads, in their order.
    static func read(_ files: [WalkedFile], limits: InputLimits, threads: Int) -> [Result<FileRecord, SkippedFile>] {
        let results = ResultSlots<Result<FileRecord, SkippedFile>>(count: files.count)
        let next = NextIndex()
        let group = DispatchGroup()
        for _ in 0..<min(threads, files.count) {
            group.enter()
            startThread(named: "reel-library-read") {
                while let index = next.take(below: files.count) {
                    results.set(index, readOne(files[index], limits: limits))
                }
                group.leave()
            }
        }
        group.wait()
        return results.values()
    }

    /// One file: opened without following a link, keyed by `ContentKey` (whole when small, else from
    /// three samples), its headers parsed.
    static func readOne(_ file: WalkedFile, limits: InputLimits) -> Result<FileRecord, SkippedFile> {
        let source: FileSource
        do {
            source = try FileSource(path: file.path, followSymlinks: false)
        } catch {
            return .failure(SkippedFile(path: file.path, reason: error.message))
        }
        guard let (hash, _) = ContentKey.key(descriptor: source.fileDescriptor, size: source.count) else {
            return .failure(SkippedFile(path: file.path, reason: "could not be read to the end"))
        }
        guard source.count == file.stamp.size else {
            return .failure(SkippedFile(path: file.path, reason: "changed while it was read"))
        }
        do {
            let facts = try FileInspector.inspect(path: file.path, source: source, limits: limits)
            let stamp = FileStamp(size: source.count, modifiedNanoseconds: file.stamp.modifiedNanoseconds)
            return .success(FileRecord(path: file.path, stamp: stamp, contentHash: hash, facts: facts))
        } catch {
            return .failure(SkippedFile(path: file.path, reason: error.reason, stamp: file.stamp))
        }
    }
}

/// Results written by index from several threads.
final class ResultSlots<T: Sendable>: Sendable {
    private let slots: Mutex<[T?]>
    init(count: Int) { slots = Mutex(Array(repeating: nil, count: count)) }
    func set(_ index: Int, _ value: T) { slots.withLock { $0[index] = value } }
    /// Every slot, once every writer is done (a slot never written is a bug in the caller).
    func values() -> [T] { slots.withLock { $0.map { $0! } } }
}

/// Hands out 0, 1, 2… once each, to any thread.
final class NextIndex: Sendable {
    private let value = Mutex(0)
    func take(below count: Int) -> Int? {
        value.withLock { current in
            guard current < count else { return nil }
            defer { current += 1 }
            return current
        }
    }
}
