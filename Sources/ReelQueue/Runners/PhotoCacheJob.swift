import Foundation
import ReelExport
import ReelSystem

/// What runs a worker's cache jobs (`JobSpec.cache`, `WorkerPool.Configuration.photoCache`): `reel
/// work` gives one when it was built with photos; it reads the worker's library and decodes with
/// libheif and libvips, which this module does not link.
public protocol PhotoCacheRunner: Sendable {
    /// Starts caching `request`'s photos with `threads` decoders (0: the cores); `progress` is called
    /// after each photo with the count done (made, already cached or failed) of the total.
    func start(_ request: PhotoCacheRequest, threads: Int, progress: @escaping @Sendable (JobItems) -> Void)
        -> any PhotoCacheRun
}

/// One cache job's run.
public protocol PhotoCacheRun: Sendable {
    /// Stops it: photos being decoded finish, the rest are left (`result` then throws `cancelled`).
    func stop()
    /// The counts once every photo was done, or `cancelled` after `stop`, or why it could not start
    /// (the library cannot be opened: `internal`, retryable).
    func result() async throws(ExportError) -> PhotoCacheResult
}

private struct CacheRunHandle: JobHandle {
    let run: any PhotoCacheRun
    func stop() { run.stop() }
}

extension WorkerPool {
    /// Runs a cache job in this process (a crash decoding a photo takes the worker down, and the
    /// job's next attempt skips what was cached before it), reporting photos done of the total and
    /// their rate; the result is also written to the job's output, `<store>/jobs/<id>.json`.
    func runCache(_ job: RunningJob, _ request: PhotoCacheRequest, threads: Int) async -> ExportAttempt {
        guard let photoCache = configuration.photoCache else {
            return .failed(
                JobError(
                    code: .internal,
                    message: "this worker cannot cache photos (it was built without them); run it on a worker that can",
                    retryable: true))
        }
        let began = ContinuousClock.now
        let run = photoCache.start(request, threads: threads) { items in
            let seconds = (ContinuousClock.now - began) / .seconds(1)
            let rate = seconds > 0 && items.done > 0 ? Double(items.done) / seconds : nil
            let remaining = rate.map { Double(items.total - items.done) / $0 }
            job.report(
                JobProgress(
                    fraction: items.total > 0 ? Double(items.done) / Double(items.total) : 1, phase: .transcoding,
                    framesPerSecond: rate, secondsRemaining: remaining, items: items))
        }
        job.attach(CacheRunHandle(run: run))
        do throws(ExportError) {
            let made = try await run.result()
            let output = URL(fileURLWithPath: job.spec.output)
            guard let report = try? JSONCoding.lineEncoder.encode(made) else {
                throw ExportError(.internal, "cannot encode the cache job's result")
            }
            try await io.run { () throws(ExportError) in
                do {
                    try FileManager.default.createDirectory(
                        at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
                } catch {
                    throw ExportError(.outputFailed, "cannot make \(output.deletingLastPathComponent().path): \(error)")
                }
                try AtomicFile.write(report + Data("\n".utf8), to: output, overwrite: true)
            }
            var result = JobResult(
                ExportSession.Result(
                    bytes: Int64(report.count + 1), durationSeconds: 0, width: nil, height: nil, videoCodec: nil,
                    audioCodec: nil, networkOptimized: false,
                    elapsedSeconds: (ContinuousClock.now - began) / .seconds(1), method: .transcode,
                    decision: made.decision))
            result.cache = made
            return .completed(result)
        } catch {
            return error.code == .cancelled ? .interrupted : .failed(JobError(error))
        }
    }
}

extension PhotoCacheResult {
    /// What the job did, in one line (a result's `decision`).
    var decision: String {
        var parts = ["\(made) made", "\(cached) already cached"]
        if failed > 0 { parts.append("\(failed) could not be decoded") }
        if skipped > 0 { parts.append("\(skipped) without a picture or gone") }
        return "cached \(tiers.joined(separator: " and ")) of \(total) assets: \(parts.joined(separator: ", "))"
    }
}
