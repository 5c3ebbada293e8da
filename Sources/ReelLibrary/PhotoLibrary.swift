import Foundation
import ReelExport
import ReelMedia
import ReelSystem

/// A photo library over folders of phone media, shaped like PhotoKit's `PHPhotoLibrary` and
/// `PHAsset` class methods: scan folders in, fetch assets with `FetchOptions`, list an asset's
/// resources and write them out byte for byte, keep albums, and ask what changed since a token.
///
/// The index lives in a `LibraryStore` (`SQLiteLibraryStore` by default). Every file the library
/// reads obeys `limits` (allowed roots, sizes), as exports do.
public final class PhotoLibrary: Sendable {
    public let store: any LibraryStore
    public let limits: InputLimits
    /// The SQLite file, when the store is the embedded one (its scan lock sits beside it).
    public let databasePath: String?

    /// A library over any store.
    public init(store: any LibraryStore, limits: InputLimits = ReelExport.Asset.defaultLimits) {
        self.store = store
        self.limits = limits
        databasePath = nil
    }

    /// Opens (creating when missing) the embedded library at `path`. Throws `LibraryError`.
    public init(path: String, limits: InputLimits = ReelExport.Asset.defaultLimits) throws(LibraryError) {
        #if PhotoLibrary
            store = try SQLiteLibraryStore(path: path)
            self.limits = limits
            databasePath = path
        #else
            throw LibraryError(
                .storeFailed,
                "this build leaves out the photo library's SQLite index: rebuild with `--traits PhotoLibrary` (or plain `swift build`, which has every trait)"
            )
        #endif
    }

    // MARK: - Scanning and importing

    /// Indexes `folders` (see `LibraryScanner`): one scan at a time per library (a lock file beside
    /// the database, or the store's own lock, `LibraryStore.exclusively`; another scan waiting is
    /// refused with `.busy`).
    public func scan(_ folders: [String], progress: (@Sendable (ScanProgress) -> Void)? = nil) async throws
        -> ScanReport
    {
        guard databasePath != nil else {
            // A store without a file: its own lock (shared across machines), not waited for either.
            return try await store.exclusively(waitingUpTo: .zero) { try await self.scanHoldingLock(folders, progress) }
        }
        return try await scanHoldingLock(folders, progress)
    }

    private func scanHoldingLock(_ folders: [String], _ progress: (@Sendable (ScanProgress) -> Void)?) async throws
        -> ScanReport
    {
        let lock = try ScanLock(databasePath: databasePath)
        defer { lock.release() }
        var ignored = Set<String>()
        if let databasePath {
            let real = (try? FileManager.default.destinationOfSymbolicLink(atPath: databasePath)) ?? databasePath
            for suffix in ["", "-wal", "-shm", ".scan-lock"] { ignored.insert(real + suffix) }
            if let resolved = realpath(databasePath, nil) {
                let text = String(cString: resolved)
                free(resolved)
                for suffix in ["", "-wal", "-shm", ".scan-lock"] { ignored.insert(text + suffix) }
            }
        }
        let scanner = LibraryScanner(store: store, limits: limits, ignoredPaths: ignored)
        return try await scanner.scan(folders, progress: progress)
    }

    /// Adds files to the library by hand (`PHAssetCreationRequest` without edits): each is copied
    /// (or moved, with `move`, as `shouldMoveFile` does) into `folder` under its own name (a
    /// number added when taken), atomically, then `folder` is scanned. Sources must be readable
    /// regular files inside the allowed roots and limits. Returns the scan's report: the new assets
    /// are among its inserted identifiers.
    public func importFiles(_ paths: [String], into folder: String, move: Bool = false) async throws -> ScanReport {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for path in paths {
            do {
                try ReelExport.Asset.checkAccess(URL(fileURLWithPath: path), limits: limits)
            } catch {
                throw LibraryError(.invalidArgument, error.message)
            }
        }
        let limits = limits
        let failure: LibraryError? = await onOwnThread(named: "reel-library") {
            do {
                for path in paths { try Importer.place(path, into: folder, move: move, limits: limits) }
                return nil
            } catch let error as LibraryError {
                return error
            } catch {
                return LibraryError(.writeFailed, "\(error)")
            }
        }
        if let failure { throw failure }
        return try await scan([folder])
    }

    // MARK: - Fetching

    /// Assets of the whole library (`PHAsset.fetchAssets(with:)`).
    public func fetchAssets(_ options: FetchOptions = FetchOptions()) async throws -> [LibraryAsset] {
        try await store.fetchAssets(options.query(.library)).map(\.asset)
    }

    /// Assets by identifier (`fetchAssets(withLocalIdentifiers:options:)`); hidden ones included, as
    /// PhotoKit does for identifiers asked for by name.
    public func fetchAssets(withLocalIdentifiers identifiers: [String], options: FetchOptions = FetchOptions())
        async throws
        -> [LibraryAsset]
    {
        var options = options
        options.includeHiddenAssets = true
        options.includeAllBurstAssets = true
        return try await store.fetchAssets(options.query(.identifiers(identifiers))).map(\.asset)
    }

    /// The asset `identifier` names. Throws `LibraryError` (`.notFound`).
    public func asset(_ identifier: String) async throws -> LibraryAsset {
        guard let found = try await store.assets(localIdentifiers: [identifier]).first else {
            throw LibraryError(.notFound, "no asset \(identifier) in the library")
        }
        return found.asset
    }

    /// How many assets `options` select.
    public func countAssets(_ options: FetchOptions = FetchOptions()) async throws -> Int {
        try await store.countAssets(options.query(.library))
    }

    // MARK: - Resources

    /// The asset's resources (`PHAssetResource.assetResources(for:)`): its photo or video, a Live
    /// Photo's `pairedVideo` (the movie file, or the Motion Photo's embedded range), and an edited
    /// photo's `fullSizePhoto`, `adjustmentData` and `fullSizePairedVideo` (`EditLayout`).
    public func resources(for asset: LibraryAsset) async throws -> [AssetResource] {
        guard let (stored, files) = try await store.assetWithFiles(asset.localIdentifier) else {
            throw LibraryError(.notFound, "no asset \(asset.localIdentifier) in the library")
        }
        return Self.resources(of: stored, files: files)
    }

    /// The file to render for `version` of a photo (`PHImageRequestOptionsVersion`): `current` is the
    /// rendered edit (`fullSizePhoto`) when the asset has adjustments, else its `photo`; `unadjusted`
    /// and `original` are its `photo`. One read of the store. Throws `LibraryError` (`.notFound`) for
    /// an unknown asset or one without a photo.
    public func photoResource(for asset: LibraryAsset, version: AssetVersion) async throws -> AssetResource {
        guard let (stored, files) = try await store.assetWithFiles(asset.localIdentifier) else {
            throw LibraryError(.notFound, "no asset \(asset.localIdentifier) in the library")
        }
        let resources = Self.resources(of: stored, files: files)
        if version == .current, stored.asset.hasAdjustments,
            let edit = resources.first(where: { $0.type == .fullSizePhoto })
        {
            return edit
        }
        guard let photo = resources.first(where: { $0.type == .photo }) else {
            throw LibraryError(.notFound, "asset \(asset.localIdentifier) has no photo resource")
        }
        return photo
    }

    /// The resources of `stored`, from its files' records.
    static func resources(of stored: StoredAsset, files list: [FileRecord]) -> [AssetResource] {
        let files = Dictionary(list.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        let identifier = stored.asset.localIdentifier
        var resources: [AssetResource] = []
        func whole(_ type: AssetResourceType, _ file: FileRecord) -> AssetResource {
            AssetResource(
                type: type, assetLocalIdentifier: identifier, uniformTypeIdentifier: file.facts.uniformTypeIdentifier,
                originalFilename: file.name, path: file.path, offset: 0, length: file.stamp.size,
                contentHash: file.contentHash)
        }
        if let primary = files[stored.asset.path] {
            // A Motion Photo's photo resource is its still alone, as PhotoKit's has no motion in it.
            let still = primary.facts.motionPhoto?.stillLength.flatMap { $0 > 0 && $0 < primary.stamp.size ? $0 : nil }
            resources.append(
                AssetResource(
                    type: primary.facts.mediaType == .video ? .video : .photo, assetLocalIdentifier: identifier,
                    uniformTypeIdentifier: primary.facts.uniformTypeIdentifier, originalFilename: primary.name,
                    path: primary.path, offset: 0, length: still ?? primary.stamp.size,
                    contentHash: still == nil ? primary.contentHash : nil, isByteRange: still != nil))
            if let motion = primary.facts.motionPhoto {
                let stem = (primary.name as NSString).deletingPathExtension
                resources.append(
                    AssetResource(
                        type: .pairedVideo, assetLocalIdentifier: identifier, uniformTypeIdentifier: "public.mpeg-4",
                        originalFilename: stem + ".MP4", path: primary.path, offset: motion.offset,
                        length: motion.length, contentHash: nil))
            }
        }
        if let video = stored.pairedVideoPath.flatMap({ files[$0] }) { resources.append(whole(.pairedVideo, video)) }
        if let edit = stored.fullSizePhotoPath.flatMap({ files[$0] }) { resources.append(whole(.fullSizePhoto, edit)) }
        if let data = stored.adjustmentDataPath.flatMap({ files[$0] }) {
            resources.append(whole(.adjustmentData, data))
        }
        if let movie = stored.fullSizePairedVideoPath.flatMap({ files[$0] }) {
            resources.append(whole(.fullSizePairedVideo, movie))
        }
        return resources
    }

    /// What the scan noted about the asset's files: why a photo that claims a Motion Photo's video is a
    /// plain photo, and what was read wrongly but survived (a bad MakerNote, a cut XMP packet).
    public func notes(for asset: LibraryAsset) async throws -> [String] {
        guard let stored = try await store.assets(localIdentifiers: [asset.localIdentifier]).first else {
            throw LibraryError(.notFound, "no asset \(asset.localIdentifier) in the library")
        }
        let paths = [stored.asset.path] + (stored.pairedVideoPath.map { [$0] } ?? []) + stored.editPaths
        return try await store.files(atPaths: paths).flatMap { file in
            (file.facts.motionPhotoRejection.map { ["not a Motion Photo: \($0)"] } ?? []) + file.facts.warnings
        }
    }

    /// Writes a resource's bytes to `path` (`PHAssetResourceManager.writeData(for:toFile:)`): byte
    /// exact, atomic, confirmed by hash (see `ResourceWriter`). Runs off the caller's thread.
    @discardableResult
    public func writeData(
        for resource: AssetResource, toFile path: String, overwrite: Bool = false,
        progress: ResourceWriter.Progress? = nil
    ) async throws -> String {
        let result: Result<String, LibraryError> = await onOwnThread(named: "reel-library") {
            do throws(LibraryError) {
                return .success(try ResourceWriter.write(resource, to: path, overwrite: overwrite, progress: progress))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Where an identifier's resource is, checked to be the file as indexed (size and modification
    /// time): what `library:<id>` inputs resolve to. `type` nil picks the motion of a Live or Motion
    /// Photo, else the asset's own resource. Throws `.notFound`, or `.stale` when the file changed or
    /// vanished since the scan.
    public func resolve(_ identifier: String, resource type: AssetResourceType? = nil) async throws -> AssetResource {
        let asset = try await asset(identifier)
        let resources = try await resources(for: asset)
        let wanted = type ?? (resources.contains { $0.type == .pairedVideo } ? .pairedVideo : resources.first?.type)
        guard let resource = resources.first(where: { $0.type == wanted }) else {
            throw LibraryError(.notFound, "asset \(identifier) has no \(wanted?.name ?? "") resource")
        }
        guard let record = try await store.files(atPaths: [resource.path]).first else {
            throw LibraryError(.stale, "asset \(identifier): \(resource.path) is no longer in the library")
        }
        var status = stat()
        guard lstat(resource.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw LibraryError(.stale, "asset \(identifier): \(resource.path) is gone")
        }
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        guard FileStamp(size: Int64(status.st_size), modifiedNanoseconds: modified) == record.stamp else {
            throw LibraryError(.stale, "asset \(identifier): \(resource.path) changed since it was scanned")
        }
        return resource
    }

    // MARK: - Library state

    /// Marks an asset favorite or not (`PHAssetChangeRequest.isFavorite`).
    public func setFavorite(_ identifier: String, _ value: Bool) async throws {
        try await store.apply([.setFavorite(localIdentifier: identifier, value)])
    }

    /// Hides or shows an asset (`PHAssetChangeRequest.isHidden`).
    public func setHidden(_ identifier: String, _ value: Bool) async throws {
        try await store.apply([.setHidden(localIdentifier: identifier, value)])
    }

    /// What changed after `token` (`PHPhotoLibrary.fetchPersistentChanges(since:)`).
    public func changes(since token: LibraryChangeToken) async throws -> LibraryChanges {
        try await store.changes(since: token)
    }

    /// The token for now (`currentChangeToken`).
    public func currentChangeToken() async throws -> LibraryChangeToken { try await store.currentChangeToken() }
}

/// Copies or moves one file into a folder atomically, never replacing what is there.
enum Importer {
    /// Returns where the file went: `folder`/`name` (default the file's own name), with a number
    /// added when that is taken.
    @discardableResult
    static func place(_ path: String, into folder: String, named: String? = nil, move: Bool, limits: InputLimits)
        throws -> String
    {
        let name = named ?? (path as NSString).lastPathComponent
        let stem = (name as NSString).deletingPathExtension
        let ext = (name as NSString).pathExtension
        var target = folder + "/" + name
        var number = 1
        while FileManager.default.fileExists(atPath: target) {
            target = folder + "/" + stem + " (\(number))" + (ext.isEmpty ? "" : "." + ext)
            number += 1
        }
        // A move on one file system is one step that never takes a name that appeared meanwhile
        // (`AtomicFile`); across file systems (or on any failure) the file is copied instead.
        if move, (try? AtomicFile.moveIntoPlace(path, to: target, replacing: false)) != nil { return target }
        let resource = AssetResource(
            type: .photo, assetLocalIdentifier: "", uniformTypeIdentifier: "", originalFilename: name, path: path,
            offset: 0,
            length: Int64(
                (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0),
            contentHash: nil)
        try ResourceWriter.write(resource, to: target)
        if move, unlink(path) != 0 {
            throw LibraryError(
                .writeFailed, "copied \(path) to \(target) but could not remove it: \(String(cString: strerror(errno)))"
            )
        }
        return target
    }
}

/// One scan per library at a time: an exclusive `flock` on a file beside the database, dropped by
/// the kernel if the process dies.
struct ScanLock {
    private let descriptor: Int32

    init(databasePath: String?) throws(LibraryError) {
        guard let databasePath else {
            descriptor = -1
            return
        }
        descriptor = open(databasePath + ".scan-lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw LibraryError(
                .storeFailed, "cannot open \(databasePath).scan-lock: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw LibraryError(.busy, "another scan is running on \(databasePath)")
        }
    }

    func release() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
