import Foundation
import Logging
import ReelExport
import Synchronization

/// Runs one claimed job on the calling (worker) thread: export, progress into the status file at most
/// four times a second, cancel requests honoured within ~0.2 s, outcome recorded on the claim.
struct JobRunner: Sendable {
    let store: SpoolStore
    let presets: PresetLibrary
    let limits: InputLimits
    let stallTimeout: TimeInterval
    let logger = Logger(label: "reel.worker")

    /// Runs the job. `register` receives the session while it runs (so shutdown can cancel it) and
    /// `handBack` says whether a cancellation was a shutdown (hand the job back) or a user's cancel.
    func run(
        _ claim: Claim, threads: Int, register: (JobHandle?) -> Void, handBack: @escaping @Sendable () -> Bool
    ) {
        let spec = claim.spec
        let outcome: JobOutcome
        do throws(ExportError) {
            if store.cancelRequested(claim.id) { throw ExportError(.cancelled, "cancelled on request") }
            let asset = try Asset(url: URL(fileURLWithPath: spec.asset), limits: limits)
            let session = try ExportSession(asset: asset, presetName: spec.preset, presets: presets, limits: limits)
            session.outputURL = URL(fileURLWithPath: spec.output)
            session.outputFileType = spec.outputType
            session.timeRange = spec.timeRange
            session.metadataPolicy = spec.metadata
            session.shouldOptimizeForNetworkUse = spec.optimizeForNetwork
            session.stallTimeout = stallTimeout
            session.forceTranscode = spec.forceTranscode
            session.codecThreads = threads
            register(session)
            defer { register(nil) }
            let ticket = claim.ticket
            let store = store
            let lastWrite = Mutex(Date.distantPast)
            session.progressHandler = { progress in
                guard progress.status == .exporting else { return }
                let now = Date()
                let due = lastWrite.withLock { last in
                    guard now.timeIntervalSince(last) >= 0.25 else { return false }
                    last = now
                    return true
                }
                guard due else { return }
                let owned =
                    (try? store.update(
                        ticket, progress: progress.fraction, phase: progress.phase.rawValue,
                        fps: progress.framesPerSecond, eta: progress.secondsRemaining)) ?? true
                if !owned { session.cancelExport() }  // lost the claim: stop, someone else owns the job
            }
            // A watcher polls for cancel requests, so a stalled export still stops promptly.
            let done = CancellationWatch()
            let watcher = Thread {
                while !done.finished {
                    if store.cancelRequested(ticket.id) { session.cancelExport() }
                    usleep(200_000)
                }
            }
            watcher.start()
            defer { done.finish() }
            try session.exportBlocking()
            guard let result = session.result else {
                throw ExportError(.internal, "the export finished without a result")
            }
            outcome = .completed(JobResult(result))
        } catch {
            if error.code == .cancelled {
                outcome = handBack() && !store.cancelRequested(claim.id) ? .handBack : .cancelled
            } else {
                outcome = .failed(JobError(error))
            }
        }
        do {
            try store.finish(claim, outcome)
        } catch {
            logger.error("cannot record the outcome", metadata: ["job": "\(claim.id)", "error": "\(error)"])
        }
    }
}

/// A flag the job's cancel watcher polls; set when the job ends.
final class CancellationWatch: Sendable {
    private let flag = Mutex(false)
    var finished: Bool { flag.withLock { $0 } }
    func finish() { flag.withLock { $0 = true } }
}
