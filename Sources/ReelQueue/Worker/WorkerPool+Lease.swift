import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelSystem
import Synchronization

/// A running job's lease: renewed by its heartbeat, fenced when it cannot be, confirmed before publishing.
extension WorkerPool {
    /// Renews the job's lease every `renewInterval` with its latest progress, and stops the job when
    /// someone cancels it or the lease is lost. `lastRenewed` is when the last renewal that got
    /// through was sent, for `selfFence`.
    func heartbeat(_ job: RunningJob, lastRenewed: LastRenewal) async {
        while !Task.isCancelled && !job.isFinished {
            await store.waitToRenew(job.lease)
            if Task.isCancelled || job.isFinished { return }
            let sent = ContinuousClock.now
            do {
                switch try await store.renew(job.lease, progress: job.takeProgress()) {
                case .held:
                    lastRenewed.advance(to: sent)
                case .cancelRequested:
                    lastRenewed.advance(to: sent)
                    job.stop(.cancelled)
                case .lost:
                    job.stop(.lost)
                    return
                }
            } catch {
                if Task.isCancelled || job.isFinished { return }
                logger.warning("cannot renew a job's lease", metadata: ["job": "\(job.lease.id)", "error": "\(error)"])
            }
        }
    }

    /// A worker that cannot reach its store stops its job by itself once its lease must have expired,
    /// measured on this machine's monotonic clock from the last renewal that got through: whether the
    /// renewals fail or hang (a network partition that no error reports), the job stops before
    /// another worker could be given it. Once the store answers again, the job is handed back if it is
    /// still this worker's (`StopReason.expired`).
    func selfFence(_ job: RunningJob, lease: Duration, lastRenewed: LastRenewal) async {
        let step = min(lease / 4, .seconds(1))
        while !Task.isCancelled && !job.isFinished {
            if ContinuousClock.now - lastRenewed.instant >= lease {
                logger.error(
                    "stopping a job whose lease has expired while the store was unreachable",
                    metadata: ["job": "\(job.lease.id)"])
                job.stop(.expired)
                return
            }
            try? await Task.sleep(for: step)
        }
    }

    /// The publish gate: a finished export is renamed into place only if renewing its lease (fenced
    /// on the token) says it is still this worker's and nobody cancelled it. An answer that took half
    /// a lease or more to arrive is not trusted: the lease it renewed may have run out since.
    ///
    /// While the store cannot be reached the gate waits, asking again with backoff, until the store
    /// answers or the lease has certainly expired (a whole lease since the last renewal that got
    /// through; for a store whose leases last as long as the worker, the stall timeout): an outage
    /// shorter than the lease costs the job nothing. A lease that ran out stops the job
    /// (`StopReason.expired`), which is handed back, never failed. Before saying "publish", the gate
    /// leaves a `PublishReceipt` beside the output.
    func confirm(_ job: RunningJob, lastRenewed: LastRenewal) async -> PublishVerdict {
        var backoff = Backoff()
        let waitedSince = ContinuousClock.now
        var warned = false
        while true {
            if let reason = job.stopReason, reason >= .cancelled { return .stopped }
            let verdict: PublishVerdict
            if let lease = store.leaseDuration {
                // An answer after half a lease is not trusted anyway, so none is waited for longer.
                verdict = await PublishVerdict.within(lease / 2) { [self] in
                    await confirmNow(job, lastRenewed: lastRenewed)
                }
            } else {
                verdict = await confirmNow(job, lastRenewed: lastRenewed)
            }
            switch verdict {
            case .publish:
                do {
                    try await io.run { () throws(FileSystem.Failure) in try PublishReceipt.write(for: job.lease) }
                } catch {
                    // Publishing without one only loses the adoption after a long outage (a file
                    // system without user extended attributes).
                    logger.warning(
                        "cannot leave a publish receipt", metadata: ["job": "\(job.lease.id)", "error": "\(error)"])
                }
                return .publish
            case .stopped:
                return .stopped
            case .unconfirmed(let reason):
                let deadline =
                    store.leaseDuration.map { lastRenewed.instant + $0 }
                    ?? waitedSince + .seconds(configuration.stallTimeout)
                if ContinuousClock.now + backoff.delay >= deadline {
                    logger.error(
                        "the store did not confirm a finished job's lease before it expired; handing the job back",
                        metadata: ["job": "\(job.lease.id)", "error": "\(reason)"])
                    job.stop(.expired)
                    return .stopped
                }
                if !warned {
                    logger.warning(
                        "cannot confirm a finished job's lease yet; waiting for the store",
                        metadata: ["job": "\(job.lease.id)", "error": "\(reason)"])
                    warned = true
                }
                await backoff.wait()
            }
        }
    }

    func confirmNow(_ job: RunningJob, lastRenewed: LastRenewal) async -> PublishVerdict {
        let sent = ContinuousClock.now
        do {
            switch try await store.renew(job.lease, progress: nil) {
            case .held:
                if let lease = store.leaseDuration, ContinuousClock.now - sent >= lease / 2 {
                    logger.warning(
                        "the store confirmed the job's lease too late to trust; asking again",
                        metadata: ["job": "\(job.lease.id)"])
                    return .unconfirmed("the store took \(ContinuousClock.now - sent) to confirm the lease")
                }
                lastRenewed.advance(to: sent)
                return .publish
            case .cancelRequested:
                job.stop(.cancelled)
                return .stopped
            case .lost:
                job.stop(.lost)
                return .stopped
            }
        } catch {
            return .unconfirmed("\(error)")
        }
    }

}
