import Foundation

/// Turns a batch of read files into asset writes: updates for changed and moved files, Live Photo
/// pairs for new ones (within the batch first, then against the library), standalone assets for
/// the rest; one transaction per batch. Tracks what it inserted, changed and removed.
final class ScanState {
    let store: any LibraryStore
    let addedDate: Date
    var tracker = ChangeTracker()
    /// The edits' files of each folder the walk listed (`EditLayout`), for folders that have any.
    var editListings: [String: EditLayout.Listing] = [:]
    /// Originals' stems whose edit may have changed in this scan: reconciled at its end.
    var touchedEdits = Set<EditLayout.Key>()
    /// Folders this scan listed: only their edits are reconciled (another folder's listing is unknown;
    /// a vanished folder's originals are gone with it).
    var walkedFolders = Set<String>()

    init(store: any LibraryStore, addedDate: Date) {
        self.store = store
        self.addedDate = addedDate
    }

    /// Operations with what each means for the change report.
    struct Batch {
        enum Effect {
            case none, inserted, changed
            case removed(String)
        }
        var operations: [LibraryOperation] = []
        var effects: [Effect] = []
        mutating func add(_ operation: LibraryOperation, _ effect: Effect = .none) {
            operations.append(operation)
            effects.append(effect)
        }
    }

    func commit(_ batch: Batch) async throws {
        guard !batch.operations.isEmpty else { return }
        let results = try await store.apply(batch.operations)
        for (effect, result) in zip(batch.effects, results) {
            switch effect {
            case .none: break
            case .inserted: if let id = result { tracker.insert(id) }
            case .changed: if let id = result { tracker.change(id) }
            case .removed(let id): tracker.remove(id)
            }
        }
    }

    func resolve(new: [FileRecord], changed: [FileRecord], moved: [(FileRecord, FileRecord)]) async throws {
        var batch = Batch()
        var newFiles = new
        // Assets this batch already rewrote, by identifier, so two files of one asset compose.
        var touched: [String: StoredAsset] = [:]
        func current(_ stored: StoredAsset) -> StoredAsset { touched[stored.asset.localIdentifier] ?? stored }

        for (record, old) in moved {
            batch.add(.removeFile(path: old.path))
            batch.add(.putFile(record))
            guard let found = try await store.asset(containingPath: old.path) else {
                newFiles.append(record)
                continue
            }
            var stored = current(found)
            if stored.asset.path == old.path {
                // A moved original leaves its edit behind: the edit is found again by name at the end.
                stored.clearEdit()
                stored.asset.path = record.path
                stored.asset.originalFilename = record.name
                stored.asset.modificationDate = Date(
                    timeIntervalSince1970: Double(record.stamp.modifiedNanoseconds) / 1e9)
            } else {
                stored.pairedVideoPath = record.path
            }
            touched[stored.asset.localIdentifier] = stored
        }

        for record in changed {
            batch.add(.putFile(record))
            guard let found = try await store.asset(containingPath: record.path) else {
                newFiles.append(record)
                continue
            }
            var stored = current(found)
            if stored.asset.path == record.path {
                var rebuilt = AssetBuilder.asset(from: record, addedDate: stored.asset.addedDate)
                rebuilt.localIdentifier = stored.asset.localIdentifier
                rebuilt.isFavorite = stored.asset.isFavorite
                rebuilt.isHidden = stored.asset.isHidden
                var keptVideo: String?
                if let videoPath = stored.pairedVideoPath, let kind = stored.asset.pairing,
                    let video = try await store.files(atPaths: [videoPath]).first
                {
                    if kind == .imported
                        || !(record.facts.contentIdentifier != nil && video.facts.contentIdentifier != nil
                            && !LivePhotoRules.same(record.facts.contentIdentifier, video.facts.contentIdentifier))
                    {
                        rebuilt = AssetBuilder.paired(rebuilt, video: video, kind: kind)
                        keptVideo = videoPath
                    } else {
                        batch.add(
                            .insertAsset(StoredAsset(asset: AssetBuilder.asset(from: video, addedDate: addedDate))),
                            .inserted)
                    }
                }
                stored = StoredAsset(asset: rebuilt, pairedVideoPath: keptVideo)
            } else if let kind = stored.asset.pairing {
                if LivePhotoRules.same(stored.asset.contentIdentifier, record.facts.contentIdentifier)
                    || kind == .inferred || kind == .imported
                {
                    stored.asset = AssetBuilder.paired(stored.asset, video: record, kind: kind)
                } else {
                    stored.asset = AssetBuilder.unpaired(stored.asset)
                    stored.pairedVideoPath = nil
                    batch.add(
                        .insertAsset(StoredAsset(asset: AssetBuilder.asset(from: record, addedDate: addedDate))),
                        .inserted)
                }
            }
            touched[stored.asset.localIdentifier] = stored
        }
        for stored in touched.values.sorted(by: { $0.asset.localIdentifier < $1.asset.localIdentifier }) {
            batch.add(.updateAsset(stored), .changed)
        }

        // An edit's rendered photo or movie beside its original waits for the end of the scan.
        let waiting = newFiles.filter { holdsBack($0.path) }
        for file in waiting { batch.add(.putFile(file)) }
        try await pair(newFiles.filter { !holdsBack($0.path) }, into: &batch, touched: touched)
        try await commit(batch)
    }

    /// Whether the file at `path` is an edit's rendered photo or movie whose original is beside it.
    func holdsBack(_ path: String) -> Bool {
        editListings[PathParts.folder(of: path)]?.holdsBack(PathParts.name(of: path)) ?? false
    }

    /// Notes that the file at `path` is new, changed or gone: when it is one of an edit's files, or an
    /// original with an edit's files beside it, that edit is reconciled at the end of the scan.
    func noteEdit(_ path: String) {
        let folder = PathParts.folder(of: path)
        let (role, stem) = EditLayout.role(ofName: PathParts.name(of: path))
        if role != .original || editListings[folder]?.hasEdit(stem) == true {
            touchedEdits.insert(EditLayout.Key(folder: folder, stem: stem))
        }
    }

    /// Brings every touched edit in line with the files: the original's asset gets its edit's files
    /// (standalone assets of them go), or, without an original, rendered photos and movies become
    /// assets of their own.
    func reconcileEdits() async throws {
        let keys = touchedEdits.filter { walkedFolders.contains($0.folder) }.sorted()
        touchedEdits = []
        for start in stride(from: 0, to: keys.count, by: 128) {
            var batch = Batch()
            var orphans: [FileRecord] = []
            for key in keys[start..<min(keys.count, start + 128)] {
                orphans += try await reconcile(key, into: &batch)
            }
            if !orphans.isEmpty { try await pair(orphans, into: &batch, touched: [:]) }
            try await commit(batch)
        }
    }

    /// One edit: returns the files that are to be assets of their own.
    private func reconcile(_ key: EditLayout.Key, into batch: inout Batch) async throws -> [FileRecord] {
        let listing = editListings[key.folder]
        func paths(_ names: [String]?) -> [String] { (names ?? []).map { key.folder + "/" + $0 } }
        let renderedPaths = paths(listing?.renderedPhotos[key.stem])
        let moviePaths = paths(listing?.renderedMovies[key.stem])
        let dataPaths = paths(listing?.adjustmentData[key.stem])
        let all = renderedPaths + moviePaths + dataPaths
        let files = Dictionary(
            try await store.files(atPaths: all).map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let rendered = renderedPaths.first { files[$0]?.facts.mediaType == .image }
        let movie = moviePaths.first { files[$0]?.facts.mediaType == .video }
        let data = dataPaths.first { files[$0] != nil }
        let original = try await store.assets(inFolder: key.folder, stem: key.stem, limit: LivePhotoRules.maxCandidates)
            .first {
                $0.asset.mediaType == .image
                    && EditLayout.role(ofName: PathParts.name(of: $0.asset.path)).role == .original
            }
        var orphans: [FileRecord] = []
        var attached = Set<String>()
        if var stored = original {
            let before = Set(stored.editPaths)
            // A movie the original already has as its pairedVideo (paired by content identifier when its
            // own movie is missing) stays that.
            let movie = movie == stored.pairedVideoPath ? nil : movie
            var handled = Set<String>()  // assets already deleted or unpaired here
            for path in [rendered, movie].compactMap({ $0 }) {
                attached.insert(path)
                guard let owner = try await store.asset(containingPath: path),
                    owner.asset.localIdentifier != stored.asset.localIdentifier,
                    handled.insert(owner.asset.localIdentifier).inserted
                else { continue }
                if owner.asset.path == path {
                    batch.add(
                        .deleteAsset(localIdentifier: owner.asset.localIdentifier),
                        .removed(owner.asset.localIdentifier))
                    if let video = owner.pairedVideoPath, video != movie,
                        let file = try await store.files(atPaths: [video]).first
                    {
                        orphans.append(file)
                    }
                } else {
                    var unpaired = owner
                    unpaired.asset = AssetBuilder.unpaired(owner.asset)
                    unpaired.pairedVideoPath = nil
                    batch.add(.updateAsset(unpaired), .changed)
                }
            }
            if let data { attached.insert(data) }
            stored.fullSizePhotoPath = rendered
            stored.adjustmentDataPath = data
            stored.fullSizePairedVideoPath = movie
            stored.asset.hasAdjustments = rendered != nil
            batch.add(.updateAsset(stored), .changed)
            // A rendered photo or movie the edit no longer uses is an asset of its own again.
            let dropped = before.subtracting(attached).filter { !dataPaths.contains($0) }
            for file in try await store.files(atPaths: dropped.sorted()) where file.facts.mediaType != .unknown {
                if try await store.asset(containingPath: file.path) == nil { orphans.append(file) }
            }
        }
        for path in renderedPaths + moviePaths where !attached.contains(path) {
            guard let file = files[path], file.facts.mediaType != .unknown,
                !orphans.contains(where: { $0.path == path }),
                try await store.asset(containingPath: path) == nil
            else { continue }
            orphans.append(file)
        }
        return orphans
    }

    /// New files: pairs inside the batch, then with the library's unpaired assets, then alone.
    func pair(_ files: [FileRecord], into batch: inout Batch, touched: [String: StoredAsset]) async throws {
        for file in files { batch.add(.putFile(file)) }
        let photos = files.filter { $0.facts.mediaType == .image && $0.facts.motionPhoto == nil }
        let videos = files.filter { $0.facts.mediaType == .video }
        var videoFor: [String: (FileRecord, PairingKind)] = [:]  // photo path → its movie from this batch
        var usedVideos = Set<String>()
        var photoUpdates: [String: StoredAsset] = [:]  // library photo assets gaining a movie
        var deletedVideoAssets = Set<String>()
        var videoOfPhoto: [String: (StoredAsset, PairingKind)] = [:]  // photo path → library video asset

        // Within the batch, by identifier: each photo proposes its best movie; a movie wanted by
        // several photos goes to the best of them from its side (folder, stem, capture time).
        var videosByIdentifier: [String: [FileRecord]] = [:]
        for video in videos {
            if let id = video.facts.contentIdentifier?.lowercased() {
                videosByIdentifier[id, default: []].append(video)
            }
        }
        var proposals: [String: [FileRecord]] = [:]  // movie path → photos wanting it
        for photo in photos {
            guard let id = photo.facts.contentIdentifier?.lowercased(), let candidates = videosByIdentifier[id],
                let video = LivePhotoRules.best(
                    candidates, for: photo.path, date: photo.facts.creationDate, path: \.path,
                    date: \.facts.creationDate)
            else { continue }
            proposals[video.path, default: []].append(photo)
        }
        for video in videos {
            guard let wanting = proposals[video.path],
                let photo = LivePhotoRules.best(
                    wanting, for: video.path, date: video.facts.creationDate, path: \.path, date: \.facts.creationDate)
            else { continue }
            videoFor[photo.path] = (video, .contentIdentifier)
            usedVideos.insert(video.path)
        }
        // Against the library, by identifier, the same way round.
        var libraryProposals: [String: (video: StoredAsset, photos: [FileRecord])] = [:]
        for photo in photos where videoFor[photo.path] == nil {
            guard let id = photo.facts.contentIdentifier else { continue }
            let candidates = try await store.assets(
                contentIdentifier: id, mediaType: .video, unpaired: true, limit: LivePhotoRules.maxCandidates
            ).filter { touched[$0.asset.localIdentifier] == nil }
            if let video = LivePhotoRules.best(
                candidates, for: photo.path, date: photo.facts.creationDate, path: \.asset.path,
                date: \.asset.creationDate)
            {
                libraryProposals[video.asset.localIdentifier, default: (video, [])].photos.append(photo)
            }
        }
        for (identifier, proposal) in libraryProposals.sorted(by: { $0.key < $1.key }) {
            guard
                let photo = LivePhotoRules.best(
                    proposal.photos, for: proposal.video.asset.path, date: proposal.video.asset.creationDate,
                    path: \.path,
                    date: \.facts.creationDate)
            else { continue }
            videoOfPhoto[photo.path] = (proposal.video, .contentIdentifier)
            deletedVideoAssets.insert(identifier)
        }
        for video in videos where !usedVideos.contains(video.path) {
            guard let id = video.facts.contentIdentifier else { continue }
            let candidates = try await store.assets(
                contentIdentifier: id, mediaType: .image, unpaired: true, limit: LivePhotoRules.maxCandidates
            ).filter { photoUpdates[$0.asset.localIdentifier] == nil && touched[$0.asset.localIdentifier] == nil }
            if let photo = LivePhotoRules.best(
                candidates, for: video.path, date: video.facts.creationDate, path: \.asset.path,
                date: \.asset.creationDate)
            {
                var update = photo
                update.asset = AssetBuilder.paired(photo.asset, video: video, kind: .contentIdentifier)
                update.pairedVideoPath = video.path
                photoUpdates[photo.asset.localIdentifier] = update
                usedVideos.insert(video.path)
            }
        }
        // Without identifiers: same folder and stem, a short movie, close capture times. The batch's
        // photos are looked up by folder and stem (in their order), not compared with every movie:
        // that comparison was a quarter of a first scan's CPU time (perf, 20,000 files).
        var photosByName: [String: [Int]] = [:]
        for (index, photo) in photos.enumerated() { photosByName[Self.name(of: photo.path), default: []].append(index) }
        // The library's assets by folder and stem for every photo and short movie of the batch, in
        // one round trip (nothing is written before the batch commits, so they cannot go stale).
        var libraryByName: [String: [StoredAsset]] = [:]
        var names: [(folder: String, stem: String)] = []
        for file in photos + videos where libraryByName[Self.name(of: file.path)] == nil {
            libraryByName[Self.name(of: file.path)] = []
            names.append((LivePhotoRules.folder(of: file.path), LivePhotoRules.stem(of: file.path)))
        }
        for (name, found) in zip(names, try await store.assets(named: names, limit: LivePhotoRules.maxCandidates)) {
            libraryByName[name.folder + "\0" + name.stem] = found
        }
        for video in videos
        where !usedVideos.contains(video.path)
            && (video.facts.duration ?? .infinity) <= LivePhotoRules.inferredMaxDuration
        {
            let side = LivePhotoRules.side(video)
            let sameName = photosByName[Self.name(of: video.path)]
            if let photo = (sameName ?? []).lazy.map({ photos[$0] }).first(where: {
                videoFor[$0.path] == nil && videoOfPhoto[$0.path] == nil
                    && LivePhotoRules.inferable(photo: LivePhotoRules.side($0), video: side)
            }) {
                videoFor[photo.path] = (video, .inferred)
                usedVideos.insert(video.path)
                continue
            }
            let candidates = libraryByName[Self.name(of: video.path)] ?? []
            if let photo = candidates.first(where: {
                $0.asset.mediaType == .image && $0.pairedVideoPath == nil && $0.asset.pairing == nil
                    && photoUpdates[$0.asset.localIdentifier] == nil && touched[$0.asset.localIdentifier] == nil
                    && LivePhotoRules.inferable(photo: LivePhotoRules.side($0.asset), video: side)
            }) {
                var update = photo
                update.asset = AssetBuilder.paired(photo.asset, video: video, kind: .inferred)
                update.pairedVideoPath = video.path
                photoUpdates[photo.asset.localIdentifier] = update
                usedVideos.insert(video.path)
            }
        }
        for photo in photos where videoFor[photo.path] == nil && videoOfPhoto[photo.path] == nil {
            let side = LivePhotoRules.side(photo)
            let candidates = libraryByName[Self.name(of: photo.path)] ?? []
            if let video = candidates.first(where: {
                $0.asset.mediaType == .video && !deletedVideoAssets.contains($0.asset.localIdentifier)
                    && touched[$0.asset.localIdentifier] == nil
                    && LivePhotoRules.inferable(photo: side, video: LivePhotoRules.side($0.asset))
            }) {
                videoOfPhoto[photo.path] = (video, .inferred)
                deletedVideoAssets.insert(video.asset.localIdentifier)
            }
        }

        // Writes: paired photos carry their movie; library movies that found a photo stop being assets.
        for photo in photos {
            var asset = AssetBuilder.asset(from: photo, addedDate: addedDate)
            var videoPath: String?
            if let (video, kind) = videoFor[photo.path] {
                asset = AssetBuilder.paired(asset, video: video, kind: kind)
                videoPath = video.path
            } else if let (video, kind) = videoOfPhoto[photo.path],
                let file = try await store.files(atPaths: [video.asset.path]).first
            {
                asset = AssetBuilder.paired(asset, video: file, kind: kind)
                videoPath = video.asset.path
                batch.add(
                    .deleteAsset(localIdentifier: video.asset.localIdentifier), .removed(video.asset.localIdentifier))
            }
            batch.add(.insertAsset(StoredAsset(asset: asset, pairedVideoPath: videoPath)), .inserted)
        }
        for file in files where file.facts.motionPhoto != nil {
            batch.add(.insertAsset(StoredAsset(asset: AssetBuilder.asset(from: file, addedDate: addedDate))), .inserted)
        }
        for update in photoUpdates.values.sorted(by: { $0.asset.localIdentifier < $1.asset.localIdentifier }) {
            batch.add(.updateAsset(update), .changed)
        }
        for video in videos where !usedVideos.contains(video.path) {
            batch.add(
                .insertAsset(StoredAsset(asset: AssetBuilder.asset(from: video, addedDate: addedDate))), .inserted)
        }
    }

    /// A still and a movie imported together (`PhotoLibrary.importLivePhoto`): one Live Photo,
    /// paired `imported`, in one transaction. An asset a vanished file at either path left behind
    /// (no rescan since) goes first, as a scan would remove it.
    func insertImportedPair(photo: FileRecord, video: FileRecord) async throws {
        var stale: [String] = []
        for path in [photo.path, video.path] where try await store.asset(containingPath: path) != nil {
            stale.append(path)
        }
        if !stale.isEmpty { try await remove(stale) }
        var batch = Batch()
        batch.add(.putFile(photo))
        batch.add(.putFile(video))
        let asset = AssetBuilder.paired(
            AssetBuilder.asset(from: photo, addedDate: addedDate), video: video, kind: .imported)
        batch.add(.insertAsset(StoredAsset(asset: asset, pairedVideoPath: video.path)), .inserted)
        try await commit(batch)
    }

    /// A path's folder and stem as one key (`LivePhotoRules.folder(of:)`, `stem(of:)`).
    static func name(of path: String) -> String {
        LivePhotoRules.folder(of: path) + "\0" + LivePhotoRules.stem(of: path)
    }

    /// Files that vanished: their assets go (a photo's movie left behind becomes a video asset of
    /// its own); a vanished movie leaves its photo a plain photo.
    func remove(_ paths: [String]) async throws {
        let gone = Set(paths)
        var deleted = Set<String>()
        for start in stride(from: 0, to: paths.count, by: 256) {
            var batch = Batch()
            for path in paths[start..<min(paths.count, start + 256)] {
                if let stored = try await store.asset(containingPath: path),
                    !deleted.contains(stored.asset.localIdentifier)
                {
                    if stored.asset.path == path {
                        batch.add(
                            .deleteAsset(localIdentifier: stored.asset.localIdentifier),
                            .removed(stored.asset.localIdentifier))
                        deleted.insert(stored.asset.localIdentifier)
                        if let video = stored.pairedVideoPath, !gone.contains(video),
                            let file = try await store.files(atPaths: [video]).first
                        {
                            batch.add(
                                .insertAsset(StoredAsset(asset: AssetBuilder.asset(from: file, addedDate: addedDate))),
                                .inserted)
                        }
                    } else if let videoPath = stored.pairedVideoPath, videoPath == path,
                        !gone.contains(stored.asset.path)
                    {
                        var unpaired = stored
                        unpaired.asset = AssetBuilder.unpaired(stored.asset)
                        unpaired.pairedVideoPath = nil
                        batch.add(.updateAsset(unpaired), .changed)
                        deleted.insert(stored.asset.localIdentifier)
                    }
                }
                batch.add(.removeFile(path: path))
            }
            try await commit(batch)
        }
    }
}
