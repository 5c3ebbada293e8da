import ArgumentParser
import Foundation
import ReelExport
import ReelLibrary
import ReelQueue
import ReelSystem
import Synchronization

#if Photos
    import ReelImage
#endif

/// `reel library cache`: PhotoKit's `PHCachingImageManager.startCachingImages` for the library's photos
/// (and Live and Motion Photos' stills): every photo decoded once into its tiers (a 250 px WebP
/// thumbnail and a 1440 px JPEG preview, short edge, never enlarged) and a ThumbHash, kept in a
/// derivative store beside the index; `reel image library:<id> --resize fast` then serves a tier
/// without decoding the photo. Photos already cached are skipped, so a run resumes where a killed one
/// stopped; a photo that cannot be decoded is recorded with its reason and never stops the rest.
struct LibraryCacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract:
            "Make every photo's thumbnail and preview ahead of requests, each photo decoded once (PHCachingImageManager)."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup var fetch: FetchArguments

    @Option(
        name: .long, help: ArgumentHelp("Only assets in this collection (see 'reel library albums').", valueName: "id"))
    var album: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The tiers to make, comma-separated: thumbnail (250 px short edge, WebP q80) and preview (1440 px, JPEG q80).",
            valueName: "list"))
    var sizes = "thumbnail,preview"

    @OptionGroup var cache: CacheFolderOption

    @Option(name: .long, help: ArgumentHelp("Photos decoded at once (default: the cores).", valueName: "n"))
    var jobs: Int?

    @Flag(name: .long, help: "Try again the photos a run recorded as undecodable.")
    var retryFailed = false

    @Flag(
        name: .long,
        help:
            "Stop the caching runs on this store (stopCachingImages): each finishes the photos it is decoding and exits."
    )
    var stop = false

    @Flag(
        name: .long,
        help:
            "Queue the caching as jobs of --batch photos each, for 'reel work' (on any machine with the library and the store) to run."
    )
    var submit = false

    @Option(
        name: .long, help: ArgumentHelp("Assets per queued job (default 200, at most 10000).", valueName: "n"))
    var batch: Int?

    @Option(name: .long, help: ArgumentHelp("Queued jobs' priority (higher runs first).", valueName: "n"))
    var priority: Int?

    @Option(name: .long, help: ArgumentHelp("Attempts each queued job may have, 1-20 (default 3).", valueName: "n"))
    var maxAttempts: Int?

    @OptionGroup var storeOptions: StoreOptions

    @Flag(name: .long, help: "One JSON object per photo per line, then the totals (with --submit: per job).")
    var json = false

    /// One photo's line in `--json`.
    struct PhotoLine: Encodable {
        var localIdentifier: String
        /// `made`, `cached` or `failed`.
        var outcome: String
        var reason: String?
        /// The ThumbHash, base64, once the photo is cached.
        var thumbHash: String?
        var done: Int
        var total: Int
    }

    #if Photos
        /// A photo's or video's line: printed as JSON, or a warning when it could not be cached.
        static func report(
            _ key: DerivativeKey, _ outcome: CacheOutcome, done: Int, total: Int, store: DerivativeStore, json: Bool,
            progress: TerminalProgress? = nil
        ) {
            var line = PhotoLine(localIdentifier: key.assetID, outcome: "made", done: done, total: total)
            progress?.draw("caching: \(done)/\(total) photos and videos", last: done == total)
            switch outcome {
            case .made: break
            case .cached: line.outcome = "cached"
            case .failed(let reason):
                guard json else {
                    progress?.clear()
                    return CLI.printWarning("\(key.assetID): not cached: \(reason)")
                }
                line.outcome = "failed"
                line.reason = reason
            }
            guard json else { return }
            line.thumbHash = store.thumbHash(key).map { Data($0).base64EncodedString() }
            CLI.printLine(CLI.jsonLine(line))
        }
    #endif

    /// The last line of `--json`.
    struct TotalsLine: Encodable {
        var cacheFolder: String
        var tiers: [String]
        var total: Int
        var made: Int
        var cached: Int
        var failed: Int
        var stopped: Int
        /// Assets with no picture to cache (audio).
        var skipped: Int
        /// Files removed because the change log says their asset was deleted or changed.
        var invalidated: Int
    }

    func validate() throws {
        if let jobs, !(1...64).contains(jobs) {
            throw ValidationError("--jobs must be between 1 and 64, not \(jobs)")
        }
        if let batch, !(1...PhotoCacheRequest.maximumAssets).contains(batch) {
            throw ValidationError("--batch must be between 1 and \(PhotoCacheRequest.maximumAssets), not \(batch)")
        }
        if (batch != nil || priority != nil || maxAttempts != nil) && !submit {
            throw ValidationError("--batch, --priority and --max-attempts apply to --submit")
        }
        if submit && stop { throw ValidationError("give --submit or --stop, not both") }
        if submit && jobs != nil { throw ValidationError("--jobs is the worker's (reel work --jobs) with --submit") }
    }

    func run() async throws {
        global.bootstrapLogging()
        #if Photos
            let tiers = try LibraryCache.tiers(sizes)
            let folder = try LibraryCache.folder(cache.cacheFolder, library: library.location())
            let store = DerivativeStore(folder: folder)
            if stop {
                try LibraryCache.requestStop(store)
                CLI.printLine("asked the caching runs on \(folder) to stop")
                let cancelled = try await LibraryCache.cancelJobs(caching: folder, in: storeOptions)
                if cancelled > 0 { CLI.printLine("cancelled \(cancelled) queued cache jobs of \(folder)") }
                return
            }
            let library = try library.open()
            let options = try fetch.options()
            let album = album
            let selected = {
                try await LibraryCLI.mapping {
                    if let album { return try await library.fetchAssets(inCollection: album, options: options) }
                    return try await library.fetchAssets(options)
                }
            }
            if submit {
                let assets = try await selected()
                try await LibraryCache.submit(
                    assets.map(\.localIdentifier), tiers: tiers, folder: folder, batch: batch, priority: priority,
                    maxAttempts: maxAttempts, retryFailed: retryFailed, store: storeOptions, json: json)
                return
            }
            // The change log since the last run: deleted assets' tiers go, updated ones keep only their
            // current version's. The token is taken first, so what changes during this run is seen by
            // the next.
            let token = try await LibraryCLI.mapping { try await library.currentChangeToken() }
            let invalidated = try await LibraryCache.invalidate(store, library: library)
            let assets = try await selected()
            let (items, withoutPhoto) = try await LibraryCache.items(assets, library: library)
            let videos = assets.filter { $0.mediaType == .video }
            let total = items.count + videos.count
            let manager = CachingImageManager(
                store: store, tiers: tiers, concurrency: jobs ?? ProcessInfo.processInfo.activeProcessorCount)
            let started = Date()
            let interrupts = CLI.onTerminationSignals { manager.stopCachingImages() }
            defer { interrupts.forEach { $0.cancel() } }
            let watch = LibraryCache.watchStop(store, since: started, manager: manager)
            defer { watch.cancel() }
            let json = json
            // On a terminal, without --json: photos done of the total on stderr's last line.
            let terminal = !json && CLI.stderrIsTerminal ? TerminalProgress() : nil
            let report = await LibraryCache.cache(
                items, videos: videos, library: library, manager: manager, retryFailed: retryFailed
            ) { key, outcome, done in
                Self.report(key, outcome, done: done, total: total, store: store, json: json, progress: terminal)
            }
            terminal?.clear()
            let skipped = withoutPhoto - videos.count
            if report.stopped == 0 { try? LibraryCache.recordToken(token, in: store) }
            if json {
                CLI.printLine(
                    CLI.jsonLine(
                        TotalsLine(
                            cacheFolder: folder, tiers: tiers.map(\.name), total: report.total, made: report.made,
                            cached: report.cached, failed: report.failed, stopped: report.stopped, skipped: skipped,
                            invalidated: invalidated)))
            } else {
                var parts = ["\(report.made) made", "\(report.cached) already cached"]
                if report.failed > 0 { parts.append("\(report.failed) could not be decoded (above)") }
                if report.stopped > 0 { parts.append("\(report.stopped) left when stopped") }
                if invalidated > 0 { parts.append("\(invalidated) files of changed or deleted assets removed") }
                let others = skipped > 0 ? "; \(skipped) assets without a picture left out" : ""
                CLI.printLine(
                    "cached \(tiers.map(\.name).joined(separator: " and ")) of \(report.total) photos and videos in \(folder): \(parts.joined(separator: ", "))\(others)"
                )
            }
            if report.stopped > 0 {
                throw CLIFailure(
                    message: "stopped with \(report.stopped) photos not cached yet; run it again to go on",
                    exitStatus: .cancelled)
            }
        #else
            throw LeftOut.photos.failure
        #endif
    }
}

/// Where a library's derivatives are (`reel library cache`, `reel image --resize fast`).
struct CacheFolderOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The library's derivative store (env REEL_LIBRARY_CACHE; default: beside a library file, <name>.derivatives; a PostgreSQL library needs one, shared by its workers).",
            valueName: "folder"))
    var cacheFolder: String?
}

#if Photos
    /// What `reel library cache` and `reel image --resize fast` share: the tiers by name, the store's
    /// folder, each asset's photo and version, and the stop request.
    enum LibraryCache {
        /// The tiers `--sizes` names, in its order.
        static func tiers(_ list: String) throws -> [PhotoTier] {
            let known = Dictionary(uniqueKeysWithValues: PhotoTier.standard.map { ($0.name, $0) })
            var tiers: [PhotoTier] = []
            for name in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
                guard let tier = known[name] else {
                    throw ValidationError(
                        "--sizes: unknown tier '\(name)' (known: \(PhotoTier.standard.map(\.name).joined(separator: ", ")))"
                    )
                }
                if !tiers.contains(tier) { tiers.append(tier) }
            }
            guard !tiers.isEmpty else { throw ValidationError("--sizes names no tier") }
            return tiers
        }

        /// The derivative store's folder: `--cache-folder`, else `$REEL_LIBRARY_CACHE`, else beside a
        /// library file (`library.sqlite` → `library.derivatives`). A PostgreSQL library has no file to
        /// sit beside: its workers share a folder they are given.
        static func folder(_ option: String?, library: LibraryOptions.Location) throws -> String {
            if let named = option ?? ProcessInfo.processInfo.environment["REEL_LIBRARY_CACHE"], !named.isEmpty {
                return URL(fileURLWithPath: named).standardizedFileURL.path
            }
            switch library {
            case .file(let path):
                let url = URL(fileURLWithPath: path).standardizedFileURL
                return url.deletingPathExtension().path + ".derivatives"
            case .database:
                throw CLIFailure(
                    message:
                        "a PostgreSQL library keeps its derivatives in a folder its workers share: name it with --cache-folder or REEL_LIBRARY_CACHE",
                    exitStatus: .usage)
            }
        }

        /// Each asset's photo to cache (a photo's file, a Live or Motion Photo's still), keyed by the
        /// asset and its picture's content key; and how many assets have none (videos).
        static func items(_ assets: [LibraryAsset], library: PhotoLibrary) async throws -> ([CacheItem], Int) {
            var items: [CacheItem] = []
            var skipped = 0
            for asset in assets {
                guard let item = try await item(asset, library: library) else {
                    skipped += 1
                    continue
                }
                items.append(item)
            }
            return (items, skipped)
        }

        /// The photo of `asset` a cache holds tiers of (its current version: the edit when it has one),
        /// nil for an asset without one (a video).
        static func item(_ asset: LibraryAsset, library: PhotoLibrary) async throws -> CacheItem? {
            try await current(asset, library: library)?.item
        }

        /// `item`, and the name of the resource it reads (`photo`, or `fullSizePhoto` for an edit).
        static func current(_ asset: LibraryAsset, library: PhotoLibrary) async throws -> (
            item: CacheItem, resource: String
        )? {
            guard asset.mediaType == .image else { return nil }
            let resource = try await LibraryCLI.mapping {
                try await library.photoResource(for: asset, version: .current)
            }
            let version = String((resource.contentHash ?? asset.contentHash).prefix(16))
            return (
                CacheItem(key: DerivativeKey(assetID: asset.localIdentifier, version: version), path: resource.path),
                resource.type.name
            )
        }

        /// Caches `items` (photos, `concurrency` at a time) and then `videos` (each one's first frame,
        /// decoded by FFmpeg as a poster and tiered as a photo is) with `manager`, calling `each` as each
        /// picture is done (`done` counting up over both); the totals, with what a stop left. What
        /// `reel library cache` and a worker's cache jobs run alike; `limits` (nil: the library's) are
        /// what the videos are read under.
        static func cache(
            _ items: [CacheItem], videos: [LibraryAsset], library: PhotoLibrary, manager: CachingImageManager,
            retryFailed: Bool, limits: InputLimits? = nil,
            each: @escaping @Sendable (DerivativeKey, CacheOutcome, Int) -> Void
        ) async -> CacheReport {
            let photos = await manager.startCachingImages(for: items, retryFailed: retryFailed) { progress in
                each(progress.item.key, progress.outcome, progress.done)
            }
            var report = photos
            report.total += videos.count
            guard photos.stopped == 0 else {
                report.stopped += videos.count
                return report
            }
            for (index, video) in videos.enumerated() {
                if manager.isStopped || Task.isCancelled {
                    report.stopped += videos.count - index
                    break
                }
                let key = DerivativeKey(assetID: video.localIdentifier, version: String(video.contentHash.prefix(16)))
                let outcome = await cachePoster(
                    video, key: key, library: library, manager: manager, retryFailed: retryFailed, limits: limits)
                report.count(outcome)
                each(key, outcome, items.count + index + 1)
            }
            return report
        }

        /// `served` for `reel image library:<id> --resize fast`: the library and its store as the options
        /// name them; nil when nothing cached serves the request.
        static func served(
            _ identifier: String, resource: String?, library options: LibraryOptions, cache: CacheFolderOption,
            limits: InputLimits, targetSize: ImageTargetSize, contentMode: ImageContentMode,
            options render: PhotoRenderOptions
        ) async throws -> RenderedPhoto? {
            guard render.crop == nil, render.metadata == .strip, render.colour == .sRGB else { return nil }
            let location = options.location(queueDatabase: StoreOptions.environmentDatabaseURL)
            guard let folder = try? self.folder(cache.cacheFolder, library: location) else { return nil }
            let library = try LibraryOptions.open(location, limits: limits)
            let asset = try await LibraryCLI.mapping { try await library.asset(identifier) }
            return try await served(
                asset, resource: resource, library: library, folder: folder, targetSize: targetSize,
                contentMode: contentMode, options: render)
        }

        /// A video asset's tiers, from its first frame (as Photos shows a video): FFmpeg decodes the frame
        /// upright to a JPEG in the temporary folder, tiered as a photo is, then removed. A video that
        /// cannot be read is recorded as a photo that cannot be decoded is.
        static func cachePoster(
            _ video: LibraryAsset, key: DerivativeKey, library: PhotoLibrary, manager: CachingImageManager,
            retryFailed: Bool, limits: InputLimits? = nil
        ) async -> CacheOutcome {
            let limits = limits ?? library.limits
            if let known = manager.knownOutcome(key, retryFailed: retryFailed) { return known }
            let poster = FileManager.default.temporaryDirectory.appendingPathComponent(
                "reel-poster-\(UUID().uuidString).jpg")
            defer { try? FileManager.default.removeItem(at: poster) }
            do {
                let resource = try await library.resolve(video.localIdentifier, resource: .video)
                let range = resource.isByteRange ? resource.offset..<(resource.offset + resource.length) : nil
                let asset = try await Asset.load(URL(fileURLWithPath: resource.path), byteRange: range, limits: limits)
                var generator = AssetImageGenerator(asset: asset, limits: limits)
                generator.quality = 95
                let (image, _) = try await generator.image(at: 0)
                try image.data.write(to: poster)
            } catch {
                let cause = (error as? ExportError)?.message ?? (error as? LibraryError)?.message ?? "\(error)"
                let reason = "\(video.originalFilename): no poster frame: \(cause)"
                try? manager.store.recordFailure(key, reason)
                return .failed(reason)
            }
            return await manager.cache(CacheItem(key: key, path: poster.path), retryFailed: true)
        }

        /// `CachingImageManager.cachedImage` for a library asset, its key as `reel library cache` made it.
        /// `resource` is the one the request reads (nil: the current version's); the cache holds the current
        /// version only, so a request for another file (`--version original` of an edited photo) is not
        /// served from it.
        static func served(
            _ asset: LibraryAsset, resource: String?, library: PhotoLibrary, folder: String,
            targetSize: ImageTargetSize, contentMode: ImageContentMode, options: PhotoRenderOptions
        ) async throws -> RenderedPhoto? {
            guard let (item, current) = try await current(asset, library: library),
                resource == nil || resource == current
            else { return nil }
            do {
                return try await CachingImageManager(store: DerivativeStore(folder: folder)).cachedImage(
                    for: item.key, width: asset.pixelWidth, height: asset.pixelHeight, targetSize: targetSize,
                    contentMode: contentMode, options: options)
            } catch {
                throw PhotoInput.exportError(error)
            }
        }

        /// Where the store keeps the change token of its last whole run.
        static func tokenPath(_ store: DerivativeStore) -> String { store.folder + "/change-token" }

        static func recordToken(_ token: LibraryChangeToken, in store: DerivativeStore) throws {
            try writeLine("\(token)", to: tokenPath(store))
        }

        /// One line written whole at `path` in the store's folder (made when missing), replacing it.
        static func writeLine(_ text: String, to path: String) throws {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try AtomicFile.write(Data("\(text)\n".utf8), to: URL(fileURLWithPath: path), overwrite: true)
        }

        /// Removes what the change log since the store's last whole run makes stale: every derivative of a
        /// deleted asset, and an updated asset's derivatives of other versions than its current one.
        /// Nothing without a token (a first run), or when the library refuses it (another library's):
        /// then every version is checked as its photo is cached. Returns the files removed.
        static func invalidate(_ store: DerivativeStore, library: PhotoLibrary) async throws -> Int {
            guard let text = try? String(contentsOfFile: tokenPath(store), encoding: .utf8),
                let token = LibraryChangeToken(text),
                let changes = try? await library.changes(since: token)
            else { return 0 }
            var removed = 0
            for id in changes.deletedLocalIdentifiers { removed += store.remove(assetID: id) }
            for id in changes.updatedLocalIdentifiers {
                guard let asset = try? await library.asset(id) else {
                    removed += store.remove(assetID: id)
                    continue
                }
                let current = try await item(asset, library: library)?.key.version
                removed += store.remove(assetID: id, keeping: current ?? "")
            }
            return removed
        }

        /// Queues `ids` as cache jobs of `batch` assets each (in the library's order), printing each job as
        /// `reel submit` does; the workers' library must be this one.
        static func submit(
            _ ids: [String], tiers: [PhotoTier], folder: String, batch: Int?, priority: Int?, maxAttempts: Int?,
            retryFailed: Bool, store options: StoreOptions, json: Bool
        ) async throws {
            guard !ids.isEmpty else {
                CLI.printLine("no assets to cache; nothing was queued")
                return
            }
            let size = batch ?? PhotoCacheRequest.defaultBatch
            var specs: [JobSpec] = []
            for start in stride(from: 0, to: ids.count, by: size) {
                var request = JobRequest(
                    asset: "library", export: ExportRequest(), priority: priority, maxAttempts: maxAttempts)
                request.cache = PhotoCacheRequest(
                    assets: Array(ids[start..<min(ids.count, start + size)]), sizes: tiers.map(\.name),
                    cacheFolder: folder, retryFailed: retryFailed ? true : nil)
                specs.append(
                    try request.resolve(
                        presets: .shipped, limits: Asset.defaultLimits, workingDirectory: URL(fileURLWithPath: "/")))
            }
            let store = try options.open(create: true)
            for spec in specs { try await SubmitReport.submit(spec, to: store, json: json) }
        }

        /// Cancels the queue's cache jobs that fill `folder` and have not ended (`stopCachingImages` for
        /// queued caching); 0 when there is no queue.
        static func cancelJobs(caching folder: String, in options: StoreOptions) async throws -> Int {
            guard let store = try? options.open(create: false) else { return 0 }
            var cancelled = 0
            for state in [JobState.waiting, .exporting] {
                for status in try await store.list(state: state) where status.spec?.cache?.cacheFolder == folder {
                    _ = try await store.cancel(status.id)
                    cancelled += 1
                }
            }
            return cancelled
        }

        /// The stop request's file: runs on the store started before it was written stop.
        static func stopPath(_ store: DerivativeStore) -> String { store.folder + "/stop-request" }

        static func requestStop(_ store: DerivativeStore) throws {
            try writeLine("\(Date().timeIntervalSince1970)", to: stopPath(store))
        }

        /// Watches for a stop request newer than `since` (four times a second) and stops `manager` when one
        /// comes; cancel the task when the run ends.
        static func watchStop(_ store: DerivativeStore, since: Date, manager: CachingImageManager) -> Task<Void, Never>
        {
            let path = stopPath(store)
            return Task.detached {
                while !Task.isCancelled {
                    if let text = try? String(contentsOfFile: path, encoding: .utf8),
                        let asked = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                        asked >= since.timeIntervalSince1970
                    {
                        manager.stopCachingImages()
                        return
                    }
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
    }
#endif

/// A line of progress on a terminal's stderr, redrawn at most ten times a second (and for the last
/// step), cleared before anything else is printed and at the end.
final class TerminalProgress: Sendable {
    private let lastDraw = Mutex(ContinuousClock.now - .seconds(1))

    func draw(_ text: String, last: Bool = false) {
        let now = ContinuousClock.now
        let due = lastDraw.withLock { drawn -> Bool in
            guard last || now - drawn > .milliseconds(100) else { return false }
            drawn = now
            return true
        }
        if due { try? FileHandle.standardError.write(contentsOf: Data("\r\(text)\u{1B}[K".utf8)) }
    }

    func clear() {
        try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8))
    }
}
