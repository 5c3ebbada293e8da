import Foundation
import ReelSystem
import Synchronization

/// One photo to cache: the asset it belongs to, the version of its picture and the file holding it.
public struct CacheItem: Sendable, Equatable {
    public var key: DerivativeKey
    /// The photo file (a Live Photo's still, an edit's rendered file).
    public var path: String

    public init(key: DerivativeKey, path: String) {
        self.key = key
        self.path = path
    }
}

/// What caching did with one photo.
public enum CacheOutcome: Sendable, Equatable {
    /// Its tiers were made, from one decode.
    case made
    /// Every tier was there already.
    case cached
    /// It could not be decoded (or written); the reason is recorded in the store and later runs report it
    /// without decoding it again.
    case failed(String)
}

/// The progress of a caching run, after each photo.
public struct CacheProgress: Sendable {
    public var item: CacheItem
    public var outcome: CacheOutcome
    /// Photos finished so far (in any way), and in all.
    public var done: Int
    public var total: Int
}

/// The totals of a caching run.
public struct CacheReport: Sendable, Equatable, Codable {
    public var total = 0
    public var made = 0
    public var cached = 0
    public var failed = 0
    /// Photos left undone because the run was stopped.
    public var stopped = 0

    /// Photos finished, in any way.
    public var done: Int { made + cached + failed }

    /// Counts one photo's outcome.
    public mutating func count(_ outcome: CacheOutcome) {
        switch outcome {
        case .made: made += 1
        case .cached: cached += 1
        case .failed: failed += 1
        }
    }

    public init(total: Int = 0, made: Int = 0, cached: Int = 0, failed: Int = 0, stopped: Int = 0) {
        self.total = total
        self.made = made
        self.cached = cached
        self.failed = failed
        self.stopped = stopped
    }
}

/// PhotoKit's `PHCachingImageManager` for a photo server: `startCachingImages(for:)` makes each photo's
/// tiers (by default Immich's: a 250 px WebP thumbnail and a 1440 px JPEG preview) and ThumbHash ahead of
/// the requests that will want them, each photo decoded **once**, into a `DerivativeStore`; requests with
/// `resizeMode` fast are then served from there. Photos already cached are skipped, so a run that was
/// killed resumes where it stopped and any number of runs may share one store; a photo that cannot be
/// decoded is recorded with its reason and never stops the rest. `stopCachingImages()` ends the runs
/// under way after the photos being decoded at that moment.
public final class CachingImageManager: Sendable {
    public let store: DerivativeStore
    public let tiers: [PhotoTier]
    public let makesThumbHash: Bool
    /// Photos decoded at once.
    public let concurrency: Int
    public let maxPixels: Int
    private let stopped = Mutex(false)

    public init(
        store: DerivativeStore, tiers: [PhotoTier] = PhotoTier.standard, thumbHash: Bool = true,
        concurrency: Int = ProcessInfo.processInfo.activeProcessorCount,
        maxPixels: Int = PhotoRenderer.defaultMaxPixels
    ) {
        self.store = store
        self.tiers = tiers
        self.makesThumbHash = thumbHash
        self.concurrency = max(1, concurrency)
        self.maxPixels = maxPixels
    }

    /// Caches `items`, `concurrency` photos at a time, reporting each photo as it finishes (one call at a
    /// time, `done` counting up); returns the totals. A photo recorded as failed is tried again only with
    /// `retryFailed`. Cancelling the task or `stopCachingImages()` ends the run early (the rest counted as
    /// stopped). The photos are decoded on `concurrency` threads of the run's own, each going from photo
    /// to photo: a thread per photo would leave the C allocator one more arena of freed pictures each
    /// time, and memory would grow with the number of photos.
    @discardableResult
    public func startCachingImages(
        for items: [CacheItem], retryFailed: Bool = false,
        progress: @escaping @Sendable (CacheProgress) -> Void = { _ in }
    ) async -> CacheReport {
        stopped.withLock { $0 = false }
        let state = Mutex((next: 0, report: CacheReport(total: items.count)))
        let workers = min(concurrency, max(1, items.count))
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let running = Mutex(workers)
                for _ in 0..<workers {
                    startThread(named: "reel-cache") { [self] in
                        nameThisThread("reel-cache")
                        while let index = state.withLock({ state -> Int? in
                            guard state.next < items.count, !stopped.withLock({ $0 }) else { return nil }
                            state.next += 1
                            return state.next - 1
                        }) {
                            let outcome = cacheNow(items[index], retryFailed: retryFailed)
                            state.withLock { state in
                                state.report.count(outcome)
                                progress(
                                    CacheProgress(
                                        item: items[index], outcome: outcome, done: state.report.done,
                                        total: items.count))
                            }
                        }
                        if running.withLock({ running in
                            running -= 1
                            return running == 0
                        }) {
                            continuation.resume()
                        }
                    }
                }
            }
        } onCancel: {
            stopCachingImages()
        }
        var report = state.withLock { $0.report }
        report.stopped = report.total - report.done
        return report
    }

    /// Ends the runs under way: photos being decoded finish, no other starts.
    public func stopCachingImages() {
        stopped.withLock { $0 = true }
    }

    /// Whether `stopCachingImages()` was called since the last run started.
    public var isStopped: Bool { stopped.withLock { $0 } }

    /// What a run would report for `key` without decoding anything: `cached` when every tier is there,
    /// `failed` with the recorded reason (unless `retryFailed`), nil when the picture must be made.
    public func knownOutcome(_ key: DerivativeKey, retryFailed: Bool = false) -> CacheOutcome? {
        if store.isComplete(key, tiers: tiers, thumbHash: makesThumbHash) { return .cached }
        if !retryFailed, let reason = store.failure(key) { return .failed(reason) }
        return nil
    }

    /// Caches one picture (a video's poster frame written to a file, say) on a thread of its own.
    public func cache(_ item: CacheItem, retryFailed: Bool = false) async -> CacheOutcome {
        await onOwnThread(named: "reel-cache") { [self] in cacheNow(item, retryFailed: retryFailed) }
    }

    /// One photo, on the calling thread: skipped when cached (or recorded as failed), else decoded once
    /// and stored.
    func cacheNow(_ item: CacheItem, retryFailed: Bool) -> CacheOutcome {
        if let known = knownOutcome(item.key, retryFailed: retryFailed) { return known }
        do throws(PhotoError) {
            let set = try PhotoRenderer.renderTiers(item.path, tiers, thumbHash: makesThumbHash, maxPixels: maxPixels)
            try store.store(set, for: item.key)
            // The asset's other versions (before an edit, a replaced file) are of no use any more.
            store.remove(assetID: item.key.assetID, keeping: item.key.version)
            return .made
        } catch {
            if error.code != .writeFailed { try? store.recordFailure(item.key, error.message) }
            return .failed(error.message)
        }
    }

    /// The cached tier that serves a request for `targetSize` (`contentMode`) of `key`'s photo, whose
    /// upright size is `width` x `height`, with PhotoKit's fast resize mode: the smallest cached tier at
    /// least as large as the render would be; nil when none is.
    public func cachedTier(
        for key: DerivativeKey, width: Int, height: Int, targetSize: ImageTargetSize,
        contentMode: ImageContentMode = .aspectFit
    ) -> (tier: PhotoTier, path: String)? {
        // The picture the tiers were made from, as the run recorded it (an edit may be cropped).
        let (width, height) = store.pictureSize(key) ?? (width, height)
        let options = PhotoRenderOptions(
            maxWidth: targetSize.width, maxHeight: targetSize.height, fill: contentMode == .aspectFill)
        for tier in tiers.sorted(by: { $0.shortEdge < $1.shortEdge }) {
            let size = tier.size(width: width, height: height)
            guard PhotoRenderer.covers(size, picture: (width, height), options),
                let path = store.cached(key, tier: tier)
            else { continue }
            return (tier, path)
        }
        return nil
    }
}

extension CachingImageManager {
    /// PhotoKit's fast resize mode served from the cache: the smallest cached tier of `key`'s photo
    /// (upright `width` x `height`) that covers `targetSize`, as it is, with `source` `cachedTier`; a
    /// tier in another format than `options.format` is encoded again from the tier's own pixels. The
    /// photo itself is never decoded. nil when no tier is cached that covers the size, or the request
    /// wants what a tier does not hold: a crop, metadata (tiers have none), Display P3.
    public func cachedImage(
        for key: DerivativeKey, width: Int, height: Int, targetSize: ImageTargetSize,
        contentMode: ImageContentMode = .aspectFit, options: PhotoRenderOptions
    ) async throws(PhotoError) -> RenderedPhoto? {
        guard options.crop == nil, options.metadata == .strip, options.colour == .sRGB,
            let (tier, path) = cachedTier(
                for: key, width: width, height: height, targetSize: targetSize, contentMode: contentMode)
        else { return nil }
        let picture = store.pictureSize(key) ?? (width, height)
        let size = tier.size(width: picture.width, height: picture.height)
        if tier.format == options.format {
            guard let data = FileManager.default.contents(atPath: path) else { return nil }
            var image = RenderedPhoto(data: data, width: size.width, height: size.height, format: tier.format)
            image.source = .cachedTier
            return image
        }
        var again = options
        again.maxWidth = 0
        again.maxHeight = 0
        again.resizeMode = .none
        var image = try await PhotoRenderer.rendering(path, again, maxPixels: maxPixels)
        image.source = .cachedTier
        return image
    }
}

extension PhotoTier {
    /// The size of this tier of a picture of `width` x `height` (upright), as libvips rounds it.
    public func size(width: Int, height: Int) -> (width: Int, height: Int) {
        guard min(width, height) > shortEdge else { return (width, height) }
        if width <= height {
            return (shortEdge, max(1, Int((Double(height) * Double(shortEdge) / Double(width)).rounded())))
        }
        return (max(1, Int((Double(width) * Double(shortEdge) / Double(height)).rounded())), shortEdge)
    }
}
