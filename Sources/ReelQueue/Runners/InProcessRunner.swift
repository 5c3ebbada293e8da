import Foundation
import ReelExport

/// Runs exports in the worker's own process (`reel work --no-isolate`): no process start per job, but
/// a crash inside a codec takes the worker down with every job it runs (a restart queues them again).
struct InProcessRunner: ExportRunner {
    let presets: PresetLibrary
    let limits: InputLimits
    let stallTimeout: TimeInterval
    /// The metadata policy of jobs that did not choose one.
    var metadataDefault = MetadataPolicy.keep

    func run(_ job: RunningJob, threads: Int, confirm: @escaping @Sendable () async -> PublishVerdict) async
        -> ExportAttempt
    {
        let spec = job.spec
        do throws(ExportError) {
            if spec.thumbnails != nil {
                let set = try await spec.thumbnailSet(limits: limits, tag: job.lease.attemptTag) {
                    () throws(ExportError) in
                    if let error = PublishVerdict.blocking(confirm).error { throw error }
                }
                set.stallTimeout = stallTimeout
                set.codecThreads = threads
                set.progressHandler = { fraction in
                    job.report(
                        JobProgress(
                            fraction: fraction, phase: .transcoding, framesPerSecond: nil, secondsRemaining: nil))
                }
                job.attach(set)
                let made = try await set.run(limits: spec.inputLimits(limits))
                var completed = JobResult(made.summary)
                completed.thumbnails = made
                return .completed(completed)
            }
            let loading = ContinuousClock.now
            let asset = try await spec.loadAsset(limits: limits)
            let loadSeconds = (ContinuousClock.now - loading) / .seconds(1)
            let session = try ExportSession(
                asset: asset, presetName: spec.preset, presets: presets, limits: spec.inputLimits(limits))
            spec.configure(session, stallTimeout: stallTimeout, threads: threads, metadataDefault: metadataDefault)
            session.temporaryTag = job.lease.attemptTag
            session.publishGate = { () throws(ExportError) in
                if let error = PublishVerdict.blocking(confirm).error { throw error }
            }
            session.progressHandler = { progress in
                if progress.status == .exporting { job.report(JobProgress(progress)) }
            }
            job.attach(session)
            try await session.export()
            guard var result = session.result else {
                throw ExportError(.internal, "the export finished without a result")
            }
            // The asset's probe came before the session: it is probing too.
            result.phases?.probe += loadSeconds
            var completed = JobResult(result)
            completed.ladder = session.ladderResult
            return .completed(completed)
        } catch {
            // Cancelled only ever by the worker (`job.stop`), whose stop reason decides what it means.
            return error.code == .cancelled ? .interrupted : .failed(JobError(error))
        }
    }
}

extension JobSpec {
    /// Sets a session up to export this spec; `metadataDefault` applies when the spec did not choose.
    func configure(
        _ session: ExportSession, stallTimeout: TimeInterval, threads: Int, metadataDefault: MetadataPolicy = .keep
    ) {
        // The export settings through the one path `reel export` takes (`ExportSession.apply`); then
        // what only a queued job has: its output path, the worker's limits, a library photo's moment.
        session.apply(settings(preset: session.preset), metadataDefault: metadataDefault)
        session.outputURL = URL(fileURLWithPath: output)
        session.stallTimeout = stallTimeout
        session.posterTime = library?.stillImageTime
        session.codecThreads = threads
        if let library {
            session.metadataOverrides = library.metadata(
                saving: saveToLibrary, keepContentIdentifier: keepContentIdentifier)
        }
    }
}
