import Foundation
import ReelExport
// `public`: the runner takes an `InputLimits`, ReelMedia's `InputPolicy` under ReelExport's name.
public import ReelMedia
import ReelSystem
import Synchronization

/// What runs a worker's cache jobs (`JobSpec.cache`, `WorkerPool.Configuration.photoCache`): `reel
/// work` gives one when it was built with photos; it reads the worker's library and decodes with
/// libheif and libvips, which this module does not link.
public protocol PhotoCacheRunner: Sendable {
    /// Starts caching `request`'s photos with `threads` decoders (0: the cores), under the worker's
    /// input `limits` (allowed roots, file size, photo pixels); `progress` is called after each photo
    /// with the count done (made, already cached or failed) of the total.
    func start(
        _ request: PhotoCacheRequest, threads: Int, limits: InputLimits,
        progress: @escaping @Sendable (JobItems) -> Void
    ) -> any PhotoCacheRun
}

/// One cache job's run.
public protocol PhotoCacheRun: Sendable {
    /// Stops it: photos being decoded finish, the rest are left (`result` then throws `cancelled`).
    func stop()
    /// The counts once every photo was done, or `cancelled` after `stop`, or why it could not start
    /// (the library cannot be opened: `internal`, retryable).
    func result() async throws(ExportError) -> PhotoCacheResult
}

/// A cache run's last progress, and its one answer: the run's result or the watchdog's `stalled`,
/// whichever comes first.
private final class CacheWatch: Sendable {
    private let state:
        Mutex<
            (
                at: ContinuousClock.Instant, items: JobItems,
                resume: (@Sendable (Result<PhotoCacheResult, ExportError>) -> Void)?, answered: Bool
            )
        >

    init(total: Int) { state = Mutex((.now, JobItems(done: 0, total: total), nil, false)) }

    var last: (ContinuousClock.Instant, JobItems) { state.withLock { ($0.at, $0.items) } }

    func saw(_ items: JobItems) { state.withLock { ($0.at, $0.items) = (.now, items) } }

    func whenAnswered(_ resume: @escaping @Sendable (Result<PhotoCacheResult, ExportError>) -> Void) {
        state.withLock { $0.resume = resume }
    }

    func answer(_ outcome: Result<PhotoCacheResult, ExportError>) {
        let resume = state.withLock { state -> (@Sendable (Result<PhotoCacheResult, ExportError>) -> Void)? in
            guard !state.answered else { return nil }
            state.answered = true
            return state.resume
        }
        resume?(outcome)
    }
}

private struct CacheRunHandle: JobHandle {
    let run: any PhotoCacheRun
    func stop() { run.stop() }
}

extension PhotoCacheRunner {
    /// Runs a cache job to its end: the result, `cancelled` once `attach`'s handle is stopped, or
    /// `stalled` when no photo was done for `stallTimeout` seconds (a decoder that hangs: its thread
    /// is left behind, and the job ends anyway). What a worker runs in its own process and an isolated
    /// job's process runs alike.
    func run(
        _ request: PhotoCacheRequest, threads: Int, limits: InputLimits, stallTimeout: TimeInterval,
        attach: (any PhotoCacheRun) -> Void, progress: @escaping @Sendable (JobItems) -> Void
    ) async throws(ExportError) -> PhotoCacheResult {
        let watched = CacheWatch(total: request.assets.count)
        let run = start(request, threads: threads, limits: limits) { items in
            watched.saw(items)
            progress(items)
        }
        attach(run)
        let outcome: Result<PhotoCacheResult, ExportError> = await withCheckedContinuation { continuation in
            watched.whenAnswered { continuation.resume(returning: $0) }
            let watch = Task.detached {
                let tick = Duration.seconds(min(0.25, stallTimeout / 4))
                while !Task.isCancelled {
                    try? await Task.sleep(for: tick)
                    let (at, items) = watched.last
                    if (ContinuousClock.now - at) / .seconds(1) > stallTimeout {
                        run.stop()
                        watched.answer(
                            .failure(
                                ExportError(
                                    .stalled,
                                    "no progress for \(Int(stallTimeout)) s after \(items.done) of \(items.total) photos; the cache job was stopped"
                                )))
                        return
                    }
                }
            }
            Task.detached {
                do throws(ExportError) {
                    watched.answer(.success(try await run.result()))
                } catch {
                    watched.answer(.failure(error))
                }
                watch.cancel()
            }
        }
        return try outcome.get()
    }
}

extension WorkerPool {
    /// Runs a cache job in this process (a crash decoding a photo takes the worker down, and the
    /// job's next attempt skips what was cached before it), reporting photos done of the total and
    /// their rate.
    func runCache(_ job: RunningJob, _ request: PhotoCacheRequest, threads: Int) async -> ExportAttempt {
        guard let photoCache = configuration.photoCache else { return .failed(Self.cannotCache) }
        let began = ContinuousClock.now
        do throws(ExportError) {
            let made = try await photoCache.run(
                request, threads: threads, limits: configuration.limits, stallTimeout: configuration.stallTimeout,
                attach: { job.attach(CacheRunHandle(run: $0)) },
                progress: { job.report(JobProgress(items: $0, since: began)) })
            var result = JobResult(made.summary(elapsed: (ContinuousClock.now - began) / .seconds(1)))
            result.cache = made
            return .completed(result)
        } catch {
            return error.code == .cancelled ? .interrupted : .failed(JobError(error))
        }
    }

    /// A worker without a cache runner (built without photos): another worker may have one.
    static let cannotCache = JobError(cannotCacheError)

    static let cannotCacheError = ExportError(
        .internal, "this worker cannot cache photos (it was built without them); run it on a worker that can",
        retryable: true)

    /// Writes a completed cache job's result to its output, `<store>/jobs/<id>.json`, whole: the
    /// job's report beside what it made.
    func writeCacheReport(_ result: JobResult, of job: RunningJob) async -> ExportAttempt {
        guard let made = result.cache, let report = try? JSONCoding.lineEncoder.encode(made) else {
            return .completed(result)
        }
        let output = URL(fileURLWithPath: job.spec.output)
        do throws(ExportError) {
            try await io.run { () throws(ExportError) in
                do {
                    try FileManager.default.createDirectory(
                        at: output.deletingLastPathComponent(), withIntermediateDirectories: true)
                } catch {
                    throw ExportError(.outputFailed, "cannot make \(output.deletingLastPathComponent().path): \(error)")
                }
                try AtomicFile.write(report + Data("\n".utf8), to: output, overwrite: true)
            }
            return .completed(result)
        } catch {
            return .failed(JobError(error))
        }
    }
}

extension JobProgress {
    /// A cache job's progress: photos done of the total, their rate since `began` and the time left.
    init(items: JobItems, since began: ContinuousClock.Instant) {
        let seconds = (ContinuousClock.now - began) / .seconds(1)
        let rate = seconds > 0 && items.done > 0 ? Double(items.done) / seconds : nil
        self.init(
            fraction: items.total > 0 ? Double(items.done) / Double(items.total) : 1, phase: .transcoding,
            framesPerSecond: rate, secondsRemaining: rate.map { Double(items.total - items.done) / $0 },
            items: items)
    }
}

extension PhotoCacheResult {
    /// The job's result as an export's (`JobResult.export`, the `completed` event's `result`): no
    /// file of its own measured, method `transcode`, and a decision saying what was cached.
    func summary(elapsed: Double) -> ExportSession.Result {
        ExportSession.Result(
            bytes: 0, durationSeconds: 0, width: nil, height: nil, videoCodec: nil, audioCodec: nil,
            networkOptimized: false, elapsedSeconds: elapsed, method: .transcode, decision: decision)
    }

    /// What the job did, in one line (a result's `decision`).
    var decision: String {
        var parts = ["\(made) made", "\(cached) already cached"]
        if failed > 0 { parts.append("\(failed) could not be decoded") }
        if skipped > 0 { parts.append("\(skipped) without a picture or gone") }
        return "cached \(tiers.joined(separator: " and ")) of \(total) assets: \(parts.joined(separator: ", "))"
    }
}
