import Foundation
import Logging
import ReelExport

extension SpoolStore {
    public func claim(worker: String) async throws -> Lease? {
        try await io.run { () throws(QueueError) in try self.claimNow(worker: worker) }
    }

    private func claimNow(worker: String) throws(QueueError) -> Lease? {
        let began = ContinuousClock.now
        promoteDueRetries()
        let names = FileSystem.names(in: path(.waiting)).filter(FileSystem.isEntry)
        for name in SpoolStore.smallest(names, count: 32) {
            guard let id = SpoolStore.id(fromMarker: name) else { continue }
            guard let lock = FileLock(path: path(.locks, "\(id).lock")) else { continue }
            // Holding the lock, the rename is the claim: it fails if another worker got here first.
            guard rename(path(.waiting, name), path(.running, id)) == 0 else {
                lock.release()
                continue
            }
            let token = UUID().uuidString
            guard let spec = try? spec(id), var status = try? status(id: id) else {
                logger.error("job has no readable spec or status; dropped", metadata: ["job": "\(id)"])
                unlink(path(.running, id))
                lock.release()
                continue
            }
            status.beginAttempt(worker: worker, now: Date())
            do {
                try storage {
                    try FileSystem.writeAtomically(Data(token.utf8), to: path(.running, id))
                    try writeStatus(status)
                }
            } catch {
                // Put it back as it was; the next claim or a restart retries.
                _ = rename(path(.running, id), path(.waiting, name))
                lock.release()
                throw error
            }
            heldLocks.withLock { $0[token] = lock }
            statusSchedule.wrote(token)
            logger.debug(
                "claimed",
                metadata: [
                    "job": "\(id)", "attempt": .stringConvertible(status.attempts), "worker": "\(worker)",
                    "claimMs": "\(String(format: "%.2f", (ContinuousClock.now - began) / .milliseconds(1)))",
                ])
            return Lease(id: id, attempt: status.attempts, token: token, worker: worker, spec: spec)
        }
        return nil
    }

    /// Whether `lease` still owns its job (its token is in the running marker).
    func holds(_ lease: Lease) -> Bool {
        FileSystem.read(path(.running, lease.id)).map { String(decoding: $0, as: UTF8.self) } == lease.token
    }

    /// Checks the lease (its token in the running marker) and a cancel request, and writes progress
    /// into the status file; without news, the status file is still rewritten so that its
    /// `heartbeatAt` shows the worker is alive (`StatusFileSchedule`).
    public func renew(_ lease: Lease, progress: JobProgress?) async throws -> LeaseState {
        try await io.run { () throws(QueueError) in try self.renewNow(lease, progress: progress) }
    }

    private func renewNow(_ lease: Lease, progress: JobProgress?) throws(QueueError) -> LeaseState {
        guard holds(lease) else { return .lost }
        if cancelRequested(lease.id) { return .cancelRequested }
        let now = Date()
        if statusSchedule.isDue(lease.token, hasProgress: progress != nil), var status = try status(id: lease.id) {
            if let progress {
                status.record(progress, now: now)
            } else {
                status.heartbeatAt = now
            }
            try storage { try writeStatus(status, durable: false) }
        }
        return .held
    }

    /// Whether someone asked to cancel this job.
    func cancelRequested(_ id: String) -> Bool {
        access(path(.cancel, id), F_OK) == 0
    }

    @discardableResult
    public func finish(_ lease: Lease, _ outcome: JobOutcome) async throws -> Bool {
        try await io.run { () throws(QueueError) in try self.finishNow(lease, outcome) }
    }

    private func finishNow(_ lease: Lease, _ outcome: JobOutcome) throws(QueueError) -> Bool {
        defer { releaseLock(of: lease) }
        guard holds(lease), var status = try status(id: lease.id) else {
            logger.warning("lost the claim; not recording the outcome", metadata: ["job": "\(lease.id)"])
            return false
        }
        // A job handed back at shutdown that someone asked to cancel meanwhile ends cancelled.
        let outcome = outcome == .handBack && cancelRequested(lease.id) ? .cancelled : outcome
        let next = status.end(outcome, now: Date(), backoff: retryBackoff.delay(afterAttempts:))
        // Status first, then the markers: a crash in between is repaired by `rescueExpired()`.
        try storage {
            try writeStatus(status)
            try placeMarker(for: status, next)
        }
        unlink(path(.running, lease.id))
        unlink(path(.cancel, lease.id))
        if status.state.isTerminal {
            unlink(path(.locks, "\(lease.id).lock"))
            releaseTarget(of: status)
        }
        logger.recordedOutcome(status)
        return true
    }

    /// Puts the marker that makes a waiting job claimable (now, or after its backoff).
    func placeMarker(for status: JobStatus, _ next: JobStatus.Next) throws(FileSystem.Failure) {
        let waiting = SpoolStore.waitingName(id: status.id, priority: status.priority)
        switch next {
        case .ended:
            break
        case .waiting:
            try FileSystem.writeAtomically(Data(), to: path(.waiting, waiting))
        case .waitingUntil(let due):
            let milliseconds = UInt64(max(0, due.timeIntervalSince1970) * 1000)
            try FileSystem.writeAtomically(
                Data(), to: path(.delayed, String(format: "%013llu", milliseconds) + "-" + waiting))
        }
    }

    /// Gives up the lock of a lease this instance holds.
    func releaseLock(of lease: Lease) {
        statusSchedule.forget(lease.token)
        heldLocks.withLock { $0.removeValue(forKey: lease.token) }?.release()
    }

    /// Moves retries whose backoff has passed back into the waiting queue.
    func promoteDueRetries() {
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        for name in FileSystem.names(in: path(.delayed)) where FileSystem.isEntry(name) {
            guard let dash = name.firstIndex(of: "-"), let due = UInt64(name[..<dash]), due <= now else { continue }
            let waitingName = String(name[name.index(after: dash)...])
            _ = rename(path(.delayed, name), path(.waiting, waitingName))
        }
    }

    /// When the next delayed retry is due, if any.
    func nextRetry() -> Date? {
        let dues = FileSystem.names(in: path(.delayed)).compactMap { name -> Double? in
            name.firstIndex(of: "-").flatMap { Double(name[..<$0]) }
        }
        return dues.min().map { Date(timeIntervalSince1970: $0 / 1000) }
    }

    /// Finds jobs whose worker died (their lock is free) and puts them back in the queue, or fails them
    /// once they have used up their attempts (a poison job). Removes their temporary outputs.
    /// A dead worker's jobs are found at the next pass of any live worker (every 2 s by default).
    @discardableResult
    public func rescueExpired() async throws -> Int {
        await io.run { self.rescueNow() }
    }

    private func rescueNow() -> Int {
        var recovered = 0
        for id in FileSystem.names(in: path(.running)) where SpoolStore.isValidID(id) {
            guard let lock = FileLock(path: path(.locks, "\(id).lock")) else { continue }  // its owner is alive
            defer { lock.release() }
            // Re-check under the lock: the owner may have finished between the listing and the lock.
            guard access(path(.running, id), F_OK) == 0 else { continue }
            guard var status = try? status(id: id) else {
                unlink(path(.running, id))
                continue
            }
            (try? spec(id))??.removeTemporaryOutputs()
            let next = status.orphaned(cancelRequested: cancelRequested(id), now: Date())
            do {
                try storage {
                    try writeStatus(status)
                    try placeMarker(for: status, next)
                }
            } catch {
                logger.error("cannot recover job", metadata: ["job": "\(id)", "error": "\(error)"])
                continue
            }
            unlink(path(.running, id))
            unlink(path(.cancel, id))
            if status.state.isTerminal {
                unlink(path(.locks, "\(id).lock"))
                releaseTarget(of: status)
            }
            recovered += 1
            logger.warning(
                "recovered a job from a dead worker", metadata: ["job": "\(id)", "state": "\(status.state.rawValue)"])
        }
        return recovered
    }

    /// The `count` smallest names, sorted, without sorting the whole list.
    static func smallest(_ names: [String], count: Int) -> [String] {
        if names.count <= count { return names.sorted() }
        var best: [String] = []
        best.reserveCapacity(count + 1)
        for name in names {
            if best.count == count, let last = best.last, name >= last { continue }
            let index = best.firstIndex { name < $0 } ?? best.count
            best.insert(name, at: index)
            if best.count > count { best.removeLast() }
        }
        return best
    }
}

extension JobSpec {
    /// Removes the temporary files (`TemporaryOutput`) interrupted exports left beside the output.
    func removeTemporaryOutputs() {
        TemporaryOutput.removeLeftovers(for: URL(fileURLWithPath: output))
    }
}
