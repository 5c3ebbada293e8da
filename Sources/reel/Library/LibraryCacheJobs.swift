import Foundation
import ReelExport
import ReelLibrary
import ReelQueue
import Synchronization

#if Photos
    import ReelImage

    /// A worker's cache jobs (`reel library cache --submit`, a manifest's `cache` object): the same
    /// caching `reel library cache` does, for the job's assets, in the worker's library and the job's
    /// derivative store. Photos decoded at once: the job's codec threads (its share of the cores).
    struct WorkerPhotoCache: PhotoCacheRunner {
        let library: LazyLibrary

        func start(
            _ request: PhotoCacheRequest, threads: Int, limits: InputLimits,
            progress: @escaping @Sendable (JobItems) -> Void
        ) -> any PhotoCacheRun {
            let run = CacheJobRun()
            let library = library
            run.begin { () throws(ExportError) in
                try await Self.cache(
                    request, library: library, threads: threads, limits: limits, run: run, progress: progress)
            }
            return run
        }

        /// Caches the request's photos and videos' first frames; an identifier the library no longer
        /// has, or an asset without a picture, is skipped with its reason; a picture that cannot be
        /// decoded is recorded as failed (the store remembers it) and never stops the rest. The worker's
        /// input limits apply to every file read, whatever the library's were at its scan: a file outside
        /// the allowed roots or over the size limit is skipped with the reason, a photo over the pixel
        /// limit fails as too large.
        static func cache(
            _ request: PhotoCacheRequest, library link: LazyLibrary, threads: Int, limits: InputLimits,
            run: CacheJobRun,
            progress: @escaping @Sendable (JobItems) -> Void
        ) async throws(ExportError) -> PhotoCacheResult {
            let library = try link.library()
            guard let folder = request.cacheFolder else {
                throw ExportError(.invalidArgument, "the cache job names no cache folder", retryable: false)
            }
            let tiers: [PhotoTier]
            do {
                tiers = try LibraryCache.tiers(request.tiers.joined(separator: ","))
            } catch {
                throw ExportError(.invalidArgument, "\(error)", retryable: false)
            }
            let assets: [LibraryAsset]
            do {
                assets = try await library.fetchAssets(withLocalIdentifiers: request.assets)
            } catch {
                throw ExportError(.internal, "the library failed: \(error)")
            }
            var result = PhotoCacheResult(cacheFolder: folder, tiers: tiers.map(\.name), total: request.assets.count)
            let found = Set(assets.map(\.localIdentifier))
            for id in request.assets where !found.contains(id) {
                result.problems.append(.init(localIdentifier: id, reason: "not in the library"))
            }
            var items: [CacheItem] = []
            var videos: [LibraryAsset] = []
            for asset in assets {
                if asset.mediaType == .video {
                    videos.append(asset)
                    continue
                }
                do {
                    if let item = try await LibraryCache.item(asset, library: library) {
                        try Asset.checkAccess(URL(fileURLWithPath: item.path), limits: limits)
                        items.append(item)
                    } else {
                        result.problems.append(.init(localIdentifier: asset.localIdentifier, reason: "no picture"))
                    }
                } catch {
                    let cause = (error as? CLIFailure)?.message ?? (error as? ExportError)?.message ?? "\(error)"
                    result.problems.append(.init(localIdentifier: asset.localIdentifier, reason: cause))
                }
            }
            result.skipped = result.problems.count
            let total = request.assets.count
            let before = result.skipped
            let failures = Mutex<[PhotoCacheResult.Problem]>([])
            let manager = CachingImageManager(
                store: DerivativeStore(folder: folder), tiers: tiers,
                concurrency: threads > 0 ? threads : ProcessInfo.processInfo.activeProcessorCount,
                maxPixels: limits.maxPhotoPixels)
            run.attach(manager)
            progress(JobItems(done: before, total: total))
            let report = await LibraryCache.cache(
                items, videos: videos, library: library, manager: manager, retryFailed: request.retryFailed ?? false,
                limits: limits
            ) { key, outcome, done in
                if case .failed(let reason) = outcome {
                    failures.withLock { $0.append(.init(localIdentifier: key.assetID, reason: reason)) }
                }
                progress(JobItems(done: before + done, total: total))
            }
            if report.stopped > 0 || run.isStopped { throw ExportError(.cancelled, "the cache job was stopped") }
            result.made = report.made
            result.cached = report.cached
            result.failed = report.failed
            result.problems += failures.withLock { $0 }
            return result
        }
    }

    /// One cache job's run: its task, and the manager to stop.
    final class CacheJobRun: PhotoCacheRun {
        private struct State {
            var task: Task<Result<PhotoCacheResult, ExportError>, Never>?
            var manager: CachingImageManager?
            var stopped = false
        }
        private let state = Mutex(State())

        var isStopped: Bool { state.withLock { $0.stopped } }

        func begin(_ body: @escaping @Sendable () async throws(ExportError) -> PhotoCacheResult) {
            let task = Task { () -> Result<PhotoCacheResult, ExportError> in
                do throws(ExportError) {
                    return .success(try await body())
                } catch {
                    return .failure(error)
                }
            }
            state.withLock { $0.task = task }
        }

        func attach(_ manager: CachingImageManager) {
            let stopNow = state.withLock { state -> Bool in
                state.manager = manager
                return state.stopped
            }
            if stopNow { manager.stopCachingImages() }
        }

        func stop() {
            let (task, manager) = state.withLock { state in
                state.stopped = true
                return (state.task, state.manager)
            }
            manager?.stopCachingImages()
            task?.cancel()
        }

        func result() async throws(ExportError) -> PhotoCacheResult {
            guard let task = state.withLock({ $0.task }) else {
                throw ExportError(.internal, "the cache job did not start")
            }
            return try await task.value.get()
        }
    }
#endif
