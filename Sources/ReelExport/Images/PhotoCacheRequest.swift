import Foundation

/// Caching a library's photos as a queued job (`reel library cache --submit`, a manifest line's
/// `cache` object): `PHCachingImageManager.startCachingImages` for `assets`, run by a worker that has
/// the library (`reel work --library`). Many jobs, on many machines, fill one derivative store: each
/// photo is decoded once into its tiers, written whole under its asset, version and tier, so two
/// workers that meet on a photo write the same files.
///
/// As a manifest line: `{"cache": {"assets": ["4F1C…/L0/001", …], "sizes": ["thumbnail"]}}`.
public struct PhotoCacheRequest: Sendable, Codable, Equatable {
    /// The assets, by local identifier (1 to `maximumAssets`).
    public var assets: [String]
    /// The tiers: `thumbnail` (250 px short edge, WebP q80) and `preview` (1440 px, JPEG q80); nil:
    /// both.
    public var sizes: [String]?
    /// The derivative store's folder (absolute); nil: the worker's (`--cache-folder`,
    /// `REEL_LIBRARY_CACHE`, or beside its library file).
    public var cacheFolder: String?
    /// Try again photos a run recorded as undecodable.
    public var retryFailed: Bool?

    public init(assets: [String], sizes: [String]? = nil, cacheFolder: String? = nil, retryFailed: Bool? = nil) {
        self.assets = assets
        self.sizes = sizes
        self.cacheFolder = cacheFolder
        self.retryFailed = retryFailed
    }

    /// The most assets one job takes: a job's status file carries their identifiers.
    public static let maximumAssets = 10_000
    /// What `reel library cache --submit` puts in one job unless told.
    public static let defaultBatch = 200
    /// The tiers a cache knows, by name.
    public static let tierNames = ["thumbnail", "preview"]

    /// The keys of a manifest's `cache` object.
    package static let keys = StrictKeys.propertyNames(
        of: PhotoCacheRequest(assets: [], sizes: [], cacheFolder: "", retryFailed: false))

    /// The tiers asked for, lowercased, each once, in order (both when none are named).
    public var tiers: [String] {
        var names: [String] = []
        for name in (sizes ?? Self.tierNames).map({ $0.trimmingCharacters(in: .whitespaces).lowercased() })
        where !names.contains(name) {
            names.append(name)
        }
        return names
    }

    /// Throws `invalid-argument`, in one line, for what a worker could not run: no assets or too many,
    /// an identifier that is not one, an unknown tier, a store folder that is not absolute.
    public func check() throws(ExportError) {
        guard !assets.isEmpty else { throw ExportError(.invalidArgument, "a cache job names no assets") }
        guard assets.count <= Self.maximumAssets else {
            throw ExportError(
                .invalidArgument, "a cache job takes at most \(Self.maximumAssets) assets, not \(assets.count)")
        }
        if let bad = assets.first(where: { $0.isEmpty || $0.utf8.count > 200 || $0.contains("\n") }) {
            throw ExportError(.invalidArgument, "'\(bad.prefix(40))' is not a library identifier")
        }
        let tiers = tiers
        guard !tiers.isEmpty else { throw ExportError(.invalidArgument, "a cache job names no tier") }
        if let unknown = tiers.first(where: { !Self.tierNames.contains($0) }) {
            throw ExportError(
                .invalidArgument,
                "unknown tier '\(unknown)' (known: \(Self.tierNames.joined(separator: ", ")))")
        }
        if let cacheFolder, !cacheFolder.hasPrefix("/") {
            throw ExportError(.invalidArgument, "the cache folder must be an absolute path, not \(cacheFolder)")
        }
    }
}

/// What a cache job did (`JobResult.cache`), as `reel library cache --json`'s totals say it.
public struct PhotoCacheResult: Sendable, Codable, Equatable {
    /// The derivative store's folder, and the tiers made.
    public var cacheFolder: String
    public var tiers: [String]
    /// Assets asked for; of them, photos decoded now, photos already cached, photos (or videos'
    /// first frames) that could not be decoded, and assets with no picture (audio, or gone from the
    /// library since the job was submitted).
    public var total: Int
    public var made: Int
    public var cached: Int
    public var failed: Int
    public var skipped: Int
    /// Each one that failed or was skipped, with why.
    public var problems: [Problem]

    public struct Problem: Sendable, Codable, Equatable {
        public var localIdentifier: String
        public var reason: String
        public init(localIdentifier: String, reason: String) {
            self.localIdentifier = localIdentifier
            self.reason = reason
        }
    }

    public init(
        cacheFolder: String, tiers: [String], total: Int, made: Int = 0, cached: Int = 0, failed: Int = 0,
        skipped: Int = 0, problems: [Problem] = []
    ) {
        self.cacheFolder = cacheFolder
        self.tiers = tiers
        self.total = total
        self.made = made
        self.cached = cached
        self.failed = failed
        self.skipped = skipped
        self.problems = problems
    }
}
