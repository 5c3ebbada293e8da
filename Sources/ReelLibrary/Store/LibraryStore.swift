/// Where a library keeps its index: files, assets, albums, skips and the change history. The SQLite
/// store (`SQLiteLibraryStore`) is the embedded default; any other store (PostgreSQL for a fleet)
/// implements the same calls and passes the same contract suite (`Tests/LibraryContract`).
///
/// Nothing here names SQL: a fetch arrives as an `AssetQuery` (a parsed predicate, sort keys and
/// limits) that each store turns into its own dialect with bound parameters. Writes arrive as a batch
/// of `LibraryOperation`s applied in one transaction; the scan decides what to write from the
/// reads, holding the library's scan lock, so no other writer races its decisions.
public protocol LibraryStore: Sendable {
    /// This library's identity (the first half of its change tokens).
    func libraryIdentifier() async throws -> String

    // MARK: Files

    /// Size and modification time of every file recorded directly in `folder`, by name.
    func fileStamps(inFolder folder: String) async throws -> [String: FileStamp]
    /// Every folder holding recorded files or skips, at or under `root`.
    func folders(under root: String) async throws -> [String]
    /// The files recorded at these paths (missing paths are left out).
    func files(atPaths paths: [String]) async throws -> [FileRecord]
    /// Files whose content hash is `hash`, at most `limit`.
    func files(contentHash hash: String, limit: Int) async throws -> [FileRecord]
    /// Files whose content identifier equals `identifier` case-insensitively, at most `limit`.
    func files(contentIdentifier identifier: String, limit: Int) async throws -> [FileRecord]
    /// Every file recorded directly in `folder`.
    func files(inFolder folder: String) async throws -> [FileRecord]
    /// Skips recorded at or under `root`.
    func skippedFiles(under root: String) async throws -> [SkippedFile]

    // MARK: Assets

    /// The assets with these identifiers, in no particular order (unknown ones are left out).
    func assets(localIdentifiers: [String]) async throws -> [StoredAsset]
    /// The asset `localIdentifier` names with the records of its files (primary, paired video, edit),
    /// read together; nil for an unknown asset.
    func assetWithFiles(_ localIdentifier: String) async throws -> (StoredAsset, [FileRecord])?
    /// The asset whose primary file or paired video is `path`, if any.
    func asset(containingPath path: String) async throws -> StoredAsset?
    /// Assets of `mediaType` whose content identifier equals `identifier` case-insensitively, at
    /// most `limit`; with `unpaired`, only those with no paired video and no Motion Photo video.
    func assets(contentIdentifier identifier: String, mediaType: MediaType, unpaired: Bool, limit: Int) async throws
        -> [StoredAsset]
    /// Assets whose primary file is in `folder` and has the stem `stem` (`LivePhotoRules.stem(of:)`).
    func assets(inFolder folder: String, stem: String, limit: Int) async throws -> [StoredAsset]
    /// `assets(inFolder:stem:limit:)` for each of `names`, in their order: one round trip where the
    /// store can (a scan asks it for nearly every new photo and short movie of a batch).
    func assets(named names: [(folder: String, stem: String)], limit: Int) async throws -> [[StoredAsset]]
    /// Recorded files that belong to no asset (neither primary nor paired video), at most `limit`:
    /// what a scan interrupted between its file and asset writes left, for the next scan to finish.
    func unownedFiles(limit: Int) async throws -> [FileRecord]
    /// The assets `query` selects, in its order, up to its limit.
    func fetchAssets(_ query: AssetQuery) async throws -> [StoredAsset]
    /// Every folder holding assets' primary files, with how many (hidden ones included).
    func assetFolders() async throws -> [FolderCount]
    /// How many assets `query` selects (its limit ignored).
    func countAssets(_ query: AssetQuery) async throws -> Int

    // MARK: Writes, albums and changes

    /// Applies `operations` in order, in one transaction: all or none. Returns, for each operation,
    /// the identifier it produced (`insertAsset`) or touched, or nil. Throws `LibraryError` when an
    /// operation names an asset or album that does not exist.
    @discardableResult
    func apply(_ operations: [LibraryOperation]) async throws -> [String?]
    /// User albums with their sizes, by title.
    func albums() async throws -> [AlbumRecord]
    /// The identifiers in a user album, in the order they were added.
    func albumMembers(_ identifier: String) async throws -> [String]
    /// The token for now.
    func currentChangeToken() async throws -> LibraryChangeToken
    /// What changed after `token`. Throws `LibraryError` (`.invalidToken`) for another library's
    /// token or one from the future.
    func changes(since token: LibraryChangeToken) async throws -> LibraryChanges

    /// Refreshes the query planner's statistics after a large change (SQLite's `ANALYZE`), so no
    /// lookup falls back to a scan of the whole table. The default does nothing (PostgreSQL's
    /// autovacuum analyses on its own).
    func refreshStatistics() async throws

    // MARK: One writer at a time

    /// Runs `body` holding the library's scan lock, which scans and saves hold while they decide what
    /// to write from what they read, waiting up to `limit` for another holder (then `LibraryError`
    /// `.busy`). A store shared by several machines takes it in the store (PostgreSQL: an advisory
    /// lock); the default runs `body` as is, for stores whose lock `PhotoLibrary` takes itself (the
    /// SQLite store's is a file beside the database).
    func exclusively<T: Sendable>(waitingUpTo limit: Duration, _ body: @Sendable () async throws -> T) async throws
        -> T
}

extension LibraryStore {
    public func assetWithFiles(_ localIdentifier: String) async throws -> (StoredAsset, [FileRecord])? {
        guard let stored = try await assets(localIdentifiers: [localIdentifier]).first else { return nil }
        let paths = [stored.asset.path] + (stored.pairedVideoPath.map { [$0] } ?? []) + stored.editPaths
        return (stored, try await files(atPaths: paths))
    }

    public func assets(named names: [(folder: String, stem: String)], limit: Int) async throws -> [[StoredAsset]] {
        var found: [[StoredAsset]] = []
        for name in names { found.append(try await assets(inFolder: name.folder, stem: name.stem, limit: limit)) }
        return found
    }

    public func exclusively<T: Sendable>(waitingUpTo limit: Duration, _ body: @Sendable () async throws -> T)
        async throws -> T
    {
        try await body()
    }

    public func refreshStatistics() async throws {}
}
