import Foundation
import ReelExport
import ReelSystem

/// A still and a movie imported together as one Live Photo (`PHAssetCreationRequest` with a `photo`
/// and a `pairedVideo` resource).
extension PhotoLibrary {
    /// Copies (or moves, with `move`) the still and the movie in `paths` into `folder`, as
    /// `importFiles` does, and indexes them as ONE Live Photo whose `photo` is the still's copy and
    /// `pairedVideo` the movie's, paired `imported`: whatever their content identifiers, names or
    /// capture times say. The asset's record is the pairing, so a rescan keeps it (`ScanState` honours
    /// it when either file changes) while both files are there.
    ///
    /// Refused before anything is copied: not exactly one still (HEIC, HEIF or JPEG) and one movie
    /// (QuickTime or MP4) (`.invalidArgument`); a movie longer than
    /// `LivePhotoRules.importedMaxDuration`, a still that is a Motion Photo, or a file (or the same
    /// content) already in another Live Photo (`.cannotPair`). Waits up to `lockWait` for a running
    /// scan. Returns the report of what was indexed: the new asset is its one inserted identifier.
    public func importLivePhoto(
        _ paths: [String], into folder: String, move: Bool = false, lockWait: Duration = .seconds(30)
    ) async throws -> ScanReport {
        guard paths.count == 2 else {
            throw LibraryError(
                .invalidArgument,
                "--live takes exactly one still (HEIC or JPEG) and one movie (MOV or MP4), not \(paths.count) file"
                    + (paths.count == 1 ? "" : "s"))
        }
        for path in paths {
            do {
                try ReelExport.Asset.checkAccess(URL(fileURLWithPath: path), limits: limits)
            } catch {
                throw LibraryError(.invalidArgument, error.message)
            }
        }
        let sources = try await paths.asyncMap { try await self.readForImport($0) }
        let stills = sources.filter {
            $0.facts.mediaType == .image
                && ["public.heic", "public.heif", "public.jpeg"].contains($0.facts.uniformTypeIdentifier)
        }
        let movies = sources.filter {
            $0.facts.mediaType == .video
                && ["com.apple.quicktime-movie", "public.mpeg-4"].contains($0.facts.uniformTypeIdentifier)
        }
        guard stills.count == 1, movies.count == 1, let still = stills.first, let movie = movies.first else {
            let kinds = zip(paths, sources).map { "\($0) is \(Self.kindName($1))" }.joined(separator: ", ")
            throw LibraryError(
                .invalidArgument, "--live takes one still (HEIC or JPEG) and one movie (MOV or MP4): \(kinds)")
        }
        let stillPath = paths[sources.firstIndex { $0.path == still.path } ?? 0]
        let moviePath = paths[sources.firstIndex { $0.path == movie.path } ?? 1]
        if still.facts.motionPhoto != nil {
            throw LibraryError(
                .cannotPair, "\(stillPath) is a Motion Photo: it is a Live Photo of its own, with its movie inside it")
        }
        guard let seconds = movie.facts.duration else {
            throw LibraryError(
                .cannotPair, "\(moviePath): its length cannot be read, so it cannot be a Live Photo's movie")
        }
        if seconds > LivePhotoRules.importedMaxDuration {
            throw LibraryError(
                .cannotPair,
                "\(moviePath) lasts \(String(format: "%.1f", seconds)) s; a Live Photo's movie lasts at most "
                    + "\(Int(LivePhotoRules.importedMaxDuration)) s")
        }
        for (record, shown) in [(still, stillPath), (movie, moviePath)] {
            if let owner = try await livePhoto(holding: record) {
                throw LibraryError(.cannotPair, "\(shown) already belongs to the Live Photo \(owner)")
            }
        }

        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // The folder as a scan of it records it (symlinks resolved), inside the allowed roots.
        let resolved = try LibraryScanner(store: store, limits: limits, ignoredPaths: []).resolveRoot(folder)
        let limits = limits
        let placed: Result<(String, String), LibraryError> = await onOwnThread(named: "reel-library") {
            Self.placePair(still: stillPath, movie: moviePath, into: resolved, move: move, limits: limits)
        }
        let (stillCopy, movieCopy) = try placed.get()
        guard databasePath != nil else {
            return try await store.exclusively(waitingUpTo: lockWait) {
                try await self.indexLivePhotoHoldingLock(still: stillCopy, movie: movieCopy)
            }
        }
        let lock = try await ScanLock.waiting(databasePath: databasePath, for: lockWait)
        defer { lock.release() }
        return try await indexLivePhotoHoldingLock(still: stillCopy, movie: movieCopy)
    }

    /// What `file` is, in a few words, for a refusal.
    private static func kindName(_ file: FileRecord) -> String {
        switch file.facts.mediaType {
        case .image: "a photo (\(file.facts.format))"
        case .video: "a video (\(file.facts.format))"
        default: "neither a photo nor a video"
        }
    }

    /// The Live Photo (its identifier) that already holds `file`: the file itself, or a file of the
    /// same content, as a Live Photo's photo or paired video.
    private func livePhoto(holding file: FileRecord) async throws -> String? {
        var paths = [file.path]
        paths += try await store.files(contentHash: file.contentHash, limit: LivePhotoRules.maxCandidates).map(\.path)
        for path in paths {
            guard let owner = try await store.asset(containingPath: path), owner.asset.pairing != nil else { continue }
            return owner.asset.localIdentifier
        }
        return nil
    }

    /// The file at `path` read as a scan reads it (for what it is, before anything is copied).
    private func readForImport(_ path: String) async throws -> FileRecord {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        return try await read(try Self.walked(absolute, named: path), named: path)
    }

    /// `walked` read as a scan reads it (hashed, parsed), off the caller's thread; a file the scan
    /// would skip is `.invalidArgument` with the skip's reason, naming `path`.
    func read(_ walked: WalkedFile, named path: String) async throws -> FileRecord {
        let limits = limits
        let read = await onOwnThread(named: "reel-library") { LibraryScanner.readOne(walked, limits: limits) }
        switch read {
        case .failure(let skip): throw LibraryError(.invalidArgument, "\(path): \(skip.reason)")
        case .success(let record): return record
        }
    }

    /// The regular file at `absolute` with its size and modification time.
    static func walked(_ absolute: String, named path: String) throws -> WalkedFile {
        var status = stat()
        guard lstat(absolute, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw LibraryError(.invalidArgument, "\(path) is not a regular file")
        }
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        return WalkedFile(
            path: absolute, name: (absolute as NSString).lastPathComponent,
            stamp: FileStamp(size: Int64(status.st_size), modifiedNanoseconds: modified))
    }

    /// Places the still, then the movie; when the movie cannot be placed the still's copy is removed
    /// (or, moved, put back), so a failed import leaves nothing behind.
    private static func placePair(still: String, movie: String, into folder: String, move: Bool, limits: InputLimits)
        -> Result<(String, String), LibraryError>
    {
        func failure(_ error: any Error) -> LibraryError {
            (error as? LibraryError) ?? LibraryError(.writeFailed, "\(error)")
        }
        let stillCopy: String
        do {
            stillCopy = try Importer.place(still, into: folder, move: move, limits: limits)
        } catch {
            return .failure(failure(error))
        }
        do {
            return .success((stillCopy, try Importer.place(movie, into: folder, move: move, limits: limits)))
        } catch {
            if move {
                _ = try? AtomicFile.moveIntoPlace(stillCopy, to: still, replacing: false)
            } else {
                unlink(stillCopy)
            }
            return .failure(failure(error))
        }
    }

    /// Reads the two placed files and writes them as one asset, holding the scan lock.
    private func indexLivePhotoHoldingLock(still: String, movie: String) async throws -> ScanReport {
        let started = ContinuousClock.now
        var records: [FileRecord] = []
        // The copies, read again: their own paths and stamps, and the bytes as they landed.
        for path in [still, movie] { records.append(try await read(try Self.walked(path, named: path), named: path)) }
        var report = ScanReport(token: try await store.currentChangeToken())
        report.filesSeen = 2
        report.filesRead = 2
        for index in records.indices where ContentKey.isSampled(size: records[index].stamp.size) {
            // A sampled key another file holds is kept only for the same bytes, as a scan does.
            try await KeyConfirmation(store: store).confirm(&records[index], removed: [], changed: [])
        }
        report.bytesHashed = records.reduce(0) { $0 + min($1.stamp.size, ContentKey.wholeFileLimit) }
        let state = ScanState(store: store, addedDate: Date())
        try await state.insertImportedPair(photo: records[0], video: records[1])
        report.token = try await store.currentChangeToken()
        report.insertedLocalIdentifiers = state.tracker.inserted.sorted()
        let elapsed = (ContinuousClock.now - started).components
        report.seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        return report
    }
}

extension Array {
    /// `map` with an async transform, one element after another.
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
