import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelSystem
import Synchronization

/// One claimed job: run, checked, saved and recorded on its lease.
extension WorkerPool {
    // MARK: - One job

    /// Runs one claimed job with its heartbeat, then records the outcome on its lease.
    func execute(_ job: RunningJob, threads: Int) async {
        let began = ContinuousClock.now
        // Queue wait (submit to start) is measured for first attempts only.
        let submittedAt = job.lease.attempt == 1 ? try? await store.status(job.lease.id)?.createdAt : nil
        metrics.started(job.lease, submittedAt: submittedAt, now: job.startedAt)
        configuration.onEvent?(.started(job.lease, submittedAt: submittedAt))
        let lease = job.lease
        var attempt: ExportAttempt
        if let adopted = await adoptPublishedOutput(of: lease) {
            attempt = .completed(adopted)
        } else if let refusal = await checkLibrarySource(of: job) {
            attempt = .failed(refusal)
        } else {
            attempt = await run(job, threads: threads)
            // Another attempt of this job published the file meanwhile (this one's publish found it there).
            if case .failed(let error) = attempt, error.code == .outputExists,
                let adopted = await adoptPublishedOutput(of: lease)
            {
                attempt = .completed(adopted)
            }
        }
        // A cache job's report is written beside what it made, by the lease holder.
        if case .completed(let result) = attempt, lease.spec.cache != nil, job.stopReason != .lost {
            attempt = await writeCacheReport(result, of: job)
        }
        // The job is completed only once its output is an asset of the library; a failed save leaves
        // the published output and its receipt, so the next attempt adopts it and saves again.
        if case .completed(let result) = attempt, lease.spec.saveToLibrary, job.stopReason != .lost {
            attempt = await save(result, of: job)
        }
        let outcome: JobOutcome
        switch (attempt, job.stopReason) {
        case (_, .lost?):
            logger.warning(
                "lost the job's lease (it was given to another worker); its output was discarded",
                metadata: ["job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt)])
            return
        case (.completed(let result), _):
            outcome = .completed(result)
        case (_, .expired?), (_, .handedBack?), (.interrupted, nil), (.interrupted, .stalled?):
            // A stop is not a failure: the job goes back to the queue, this attempt not counted. (After
            // an expired lease the store may have rescued the job already; then this changes nothing.)
            outcome = .handBack
        case (_, .cancelled?):
            // Only a cancel that the store delivered ends a job cancelled, whatever the export reported.
            outcome = .cancelled
        case (.failed(let error), _):
            outcome = .failed(error)
        }
        let elapsed = ContinuousClock.now - began
        log(outcome, of: lease, exported: job.spec, elapsed: elapsed)
        let recorded = await record(outcome, of: lease)
        // Told at once, before any further I/O: between the store's record and this event a look at the
        // store no longer lists the job as running while this pool still does, and the status page would
        // show it running again (issue 24 item 8).
        metrics.ended(lease, outcome, elapsed: elapsed)
        configuration.onEvent?(.ended(lease, outcome, elapsed: elapsed))
        // The receipt stays on the output only while its completion is not recorded.
        if case .completed = outcome, recorded { await io.run { PublishReceipt.remove(for: lease) } }
    }

    /// Runs the export with its heartbeat and, when the store has leases of limited length, its
    /// self-fencing watch; returns how the export ended.
    func run(_ job: RunningJob, threads: Int) async -> ExportAttempt {
        let runner = runner
        // The lease runs from the claim: measured from before the claim was sent, never later.
        let lastRenewed = LastRenewal(job.claimSent)
        return await withTaskGroup(of: ExportAttempt?.self) { group in
            group.addTask {
                // A remote asset is downloaded first, under the heartbeat like the export.
                if job.spec.remote != nil, let ended = await self.download(job) { return ended }
                // A cache job runs here unless the worker isolates its jobs: then its process does.
                if let cache = job.spec.cache, self.configuration.isolation == nil {
                    return await self.runCache(job, cache, threads: threads)
                }
                return await runner.run(job, threads: threads) { await self.confirm(job, lastRenewed: lastRenewed) }
            }
            group.addTask { [self] in
                await heartbeat(job, lastRenewed: lastRenewed)
                return nil
            }
            if let lease = store.leaseDuration {
                group.addTask { [self] in
                    await selfFence(job, lease: lease, lastRenewed: lastRenewed)
                    return nil
                }
            }
            var attempt: ExportAttempt?
            while let next = await group.next() {
                guard let next else { continue }
                attempt = next
                job.markFinished()
                group.cancelAll()
            }
            return attempt
                ?? .failed(JobError(code: .internal, message: "the export ended without an outcome", retryable: true))
        }
    }

    /// Downloads a job's remote asset (its own phase, `downloading`, in the status file) and points the
    /// job at the local copy; nil once it is there, or how the attempt ended: failed (the worker has no
    /// network access, the job did not allow it, the policy refused the URL, the bytes are not the
    /// ones named, the download failed) or interrupted (the worker stopped it: what arrived is kept,
    /// and the next attempt resumes it).
    func download(_ job: RunningJob) async -> ExportAttempt? {
        let spec = job.spec
        guard let remote = spec.remote else { return nil }
        guard spec.networkAccessAllowed else {
            let error = ExportError(
                .networkAccessRequired, "\(remote.url) is remote and the job does not allow network access")
            return .failed(JobError(error))
        }
        guard let fetcher = configuration.remote else {
            let error = ExportError(
                .networkAccessRequired,
                "\(remote.url) is remote and this worker cannot download (built without the Remote trait)",
                retryable: false)
            return .failed(JobError(error))
        }
        let limits = configuration.limits
        let download = Task { () -> Result<(path: String, temporary: Bool), ExportError> in
            do throws(ExportError) {
                return .success(
                    try await fetcher.fetch(remote, limits: limits) { fraction in
                        job.report(
                            JobProgress(
                                fraction: fraction, phase: .downloading, framesPerSecond: nil, secondsRemaining: nil))
                    })
            } catch {
                return .failure(error)
            }
        }
        job.attach(DownloadHandle(task: download))
        switch await download.value {
        case .success(let local):
            var exported = spec
            exported.asset = local.path
            job.export(exported)
            // Nothing keys a temporary download in the cache: it is removed when the job ends.
            if local.temporary { job.onEnd { unlink(local.path) } }
            logger.info(
                "downloaded the remote asset", metadata: ["job": "\(job.lease.id)", "url": "\(remote.url)"])
            return nil
        case .failure(let error):
            return error.code == .cancelled ? .interrupted : .failed(JobError(error))
        }
    }

    /// Why a `library:<id>` job must not run, or nil. A worker with a library resolves the identifier
    /// again: the same bytes run; the same content found at another path (the file was renamed or
    /// moved and the library rescanned) runs from there (`RunningJob.export(_:)`); anything else (other
    /// bytes, none, a file changed since) is `asset-changed`, not retryable, naming the identifier. A
    /// worker without a library checks the recorded file. A library that cannot be read is a retryable
    /// failure.
    func checkLibrarySource(of job: RunningJob) async -> JobError? {
        let spec = job.lease.spec
        guard let source = spec.library else { return nil }
        do throws(ExportError) {
            guard let library = configuration.library else {
                try source.checkUnchanged()
                return nil
            }
            let now: LibrarySource
            do throws(ExportError) {
                now = try await library.resolve(source.identifier, resource: source.resource)
            } catch {
                guard error.code == .unknownAsset || error.code == .assetChanged else { throw error }
                throw source.changed("the library no longer resolves it (\(error.message))")
            }
            if now.sameBytes(as: source) {
                try source.checkUnchanged()
                return nil
            }
            guard let hash = source.contentHash, now.contentHash == hash, now.byteRange == source.byteRange else {
                throw source.changed("the library now resolves it to other bytes (\(now.path))")
            }
            try now.checkUnchanged()
            var moved = spec
            moved.asset = now.path
            moved.library = now
            job.export(moved)
            let metadata: Logger.Metadata = [
                "job": "\(job.lease.id)", "asset": "\(source.reference)", "from": "\(source.path)", "to": "\(now.path)",
            ]
            logger.info("the library asset moved; exporting it from its new path", metadata: metadata)
            return nil
        } catch {
            return JobError(error)
        }
    }

    /// Saves a completed job's output to the library (`JobSpec.saveToLibrary`): the result with the
    /// new asset's identifier, or the failure that keeps the job from completing.
    func save(_ result: JobResult, of job: RunningJob) async -> ExportAttempt {
        let lease = job.lease
        guard let library = configuration.library else {
            let error = ExportError(.saveFailed, "this worker has no library to save the output to", retryable: false)
            return .failed(JobError(error))
        }
        do throws(ExportError) {
            var saved = result
            saved.savedLocalIdentifier = try await library.saveOutput(at: lease.spec.output, from: job.spec.library)
            logger.info(
                "saved the output to the library",
                metadata: ["job": "\(lease.id)", "asset": "\(saved.savedLocalIdentifier ?? "")"])
            return .completed(saved)
        } catch {
            return .failed(JobError(error))
        }
    }

    /// The result of the job's output if an earlier attempt published it and could not record it (a
    /// `PublishReceipt` of this job names the file there); nil otherwise.
    func adoptPublishedOutput(of lease: Lease) async -> JobResult? {
        let found = await io.run {
            () -> (PublishReceipt, ExportSession.Result, LadderResult?, ThumbnailSetExport.Result?)? in
            guard let receipt = PublishReceipt.onOutput(of: lease) else { return nil }
            let output = URL(fileURLWithPath: lease.spec.output)
            if lease.spec.thumbnails != nil {
                guard let set = try? ThumbnailSetExport.describe(folder: output) else { return nil }
                return (receipt, set.summary, nil, set)
            }
            // A ladder's output is its folder: its files are listed again.
            if lease.spec.ladder != nil {
                guard let (result, ladder) = try? ExportSession.describeLadder(at: output) else { return nil }
                return (receipt, result, ladder, nil)
            }
            guard let result = try? ExportSession.describeOutput(at: output) else { return nil }
            return (receipt, result, nil, nil)
        }
        guard let (receipt, described, ladder, thumbnails) = found else { return nil }
        var result = JobResult(described, adopted: true)
        result.ladder = ladder
        result.thumbnails = thumbnails
        result.decision =
            "attempt \(receipt.attempt) published this output but could not record it; adopted without exporting again"
        logger.notice(
            "adopted the output an earlier attempt published",
            metadata: [
                "job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt),
                "publishedBy": .stringConvertible(receipt.attempt),
            ])
        return result
    }

    /// Records an outcome, retrying while the store is unreachable and the lease may still be ours.
    /// Returns whether it was recorded.
    @discardableResult
    func record(_ outcome: JobOutcome, of lease: Lease) async -> Bool {
        let deadline = ContinuousClock.now + (store.leaseDuration ?? .seconds(30))
        var backoff = Backoff()
        while true {
            do {
                if try await !store.finish(lease, outcome) {
                    logger.warning(
                        "lost the job's lease before recording its outcome", metadata: ["job": "\(lease.id)"])
                    return false
                }
                return true
            } catch {
                guard ContinuousClock.now + backoff.delay < deadline else {
                    logger.error(
                        "cannot record a job's outcome; the store will rescue the job",
                        metadata: ["job": "\(lease.id)", "error": "\(error)"])
                    return false
                }
                logger.warning(
                    "cannot record a job's outcome yet", metadata: ["job": "\(lease.id)", "error": "\(error)"])
                await backoff.wait()
            }
        }
    }

    /// The job's last line: `exported` is the spec the export ran (a library asset that moved is read
    /// at its new path), so `asset` names the file actually read.
    func log(_ outcome: JobOutcome, of lease: Lease, exported: JobSpec, elapsed: Duration) {
        var metadata: Logger.Metadata = [
            "job": "\(lease.id)", "attempt": .stringConvertible(lease.attempt), "asset": "\(exported.asset)",
            "output": "\(lease.spec.output)", "preset": "\(lease.spec.preset)",
            "elapsed": .stringConvertible((elapsed / .seconds(1) * 1000).rounded() / 1000),
        ]
        switch outcome {
        case .completed(let result):
            metadata["method"] = "\(result.methodName)"
            metadata["bytes"] = .stringConvertible(result.bytes)
            if elapsed > .zero {
                let speed = result.durationSeconds / (elapsed / .seconds(1))
                metadata["speed"] = .stringConvertible((speed * 100).rounded() / 100)
            }
            logger.info("job completed", metadata: metadata)
        case .failed(let error):
            metadata["code"] = "\(error.code)"
            metadata["message"] = "\(error.message)"
            metadata["retryable"] = .stringConvertible(error.retryable)
            logger.error("job failed", metadata: metadata)
        case .cancelled:
            logger.info("job cancelled", metadata: metadata)
        case .handBack:
            logger.info("job handed back", metadata: metadata)
        }
    }
}
