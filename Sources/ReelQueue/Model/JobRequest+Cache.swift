import Foundation
import ReelExport

extension JobRequest {
    /// The spec of a cache job: the request checked (`PhotoCacheRequest.check()`), its store folder
    /// made absolute, and its report at `<folder>/jobs/<job id>.json` (so each job has an output of its
    /// own, as every job does). The photos are not looked up here: the worker's library resolves them,
    /// and one that is gone by then is reported as skipped. Throws `invalid-argument` for an export
    /// option, `outputDir`, or a request without a store folder.
    func resolve(_ cache: PhotoCacheRequest, workingDirectory: URL) throws(ExportError) -> JobSpec {
        if export != ExportRequest() || outputDir != nil || librarySource != nil {
            var others = ExportRequest.keysSet(in: export)
            if outputDir != nil { others.append("outputDir") }
            throw ExportError(
                .invalidArgument,
                "a cache job takes none of the export's options, not \(others.sorted().joined(separator: ", "))")
        }
        guard let named = cache.cacheFolder, !named.isEmpty else {
            throw ExportError(
                .invalidArgument, "a cache job needs cache.cacheFolder: the derivative store its workers share")
        }
        var cache = cache
        let folder = JobRequest.absolute(named, in: workingDirectory)
        cache.cacheFolder = folder.path
        cache.sizes = cache.tiers
        try cache.check()
        if let key { try JobSpec.checkKey(key) }
        let attempts = try JobSpec.checkedAttempts(maxAttempts)
        var spec = JobSpec(
            asset: asset, preset: JobSpec.cacheName, outputType: .mp4,
            output: folder.appendingPathComponent("jobs/{id}.json").path, priority: priority ?? 0, key: key,
            maxAttempts: attempts)
        spec.cache = cache
        return spec
    }
}
