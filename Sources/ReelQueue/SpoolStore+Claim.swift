import Foundation
import Logging

extension SpoolStore {
    /// How long a retryable failure waits before the next attempt: exponential with full jitter.
    static func backoff(attempt: Int) -> TimeInterval {
        let base = min(60.0, 2.0 * pow(2.0, Double(max(0, attempt - 1))))
        return base / 2 + Double.random(in: 0...(base / 2))
    }

    public func claim(worker: String) throws -> Claim? {
        let began = DispatchTime.now().uptimeNanoseconds
        promoteDueRetries()
        for name in SpoolStore.smallest(
            FileSystem.names(in: path(.waiting)).filter { !$0.hasSuffix(".tmp") }, count: 32)
        {
            guard let id = SpoolStore.id(fromMarker: name) else { continue }
            guard let lock = FileLock(path: path(.locks, "\(id).lock")) else { continue }
            // Holding the lock, the rename is the claim: it fails if another worker got here first.
            guard rename(path(.waiting, name), path(.running, id)) == 0 else { continue }
            let token = UUID().uuidString
            try FileSystem.writeAtomically(Data(token.utf8), to: path(.running, id))
            guard let spec = try? spec(id), var status = try? status(id) else {
                logger.error("job has no readable spec or status; dropped", metadata: ["job": "\(id)"])
                unlink(path(.running, id))
                continue
            }
            let now = Date()
            status.state = .exporting
            status.attempts += 1
            status.progress = 0
            status.phase = "transcoding"
            status.startedAt = now
            status.updatedAt = now
            status.notBefore = nil
            status.worker = worker
            try writeStatus(status)
            let milliseconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6
            logger.info(
                "claimed",
                metadata: [
                    "job": "\(id)", "attempt": "\(status.attempts)", "worker": "\(worker)",
                    "claimMs": "\(String(format: "%.2f", milliseconds))",
                ])
            return Claim(id: id, spec: spec, attempt: status.attempts, token: token, lock: lock)
        }
        return nil
    }

    /// Whether `claim` still owns its job (its token is in the running marker).
    func holds(_ ticket: ClaimTicket) -> Bool {
        FileSystem.read(path(.running, ticket.id)).map { String(decoding: $0, as: UTF8.self) } == ticket.token
    }

    public func update(_ ticket: ClaimTicket, progress: Double, phase: String, fps: Double?, eta: Double?) throws
        -> Bool
    {
        guard holds(ticket), var status = try status(ticket.id) else { return false }
        status.progress = (progress * 1000).rounded() / 1000
        status.phase = phase
        status.fps = fps.map { ($0 * 10).rounded() / 10 }
        status.etaSeconds = eta.map { ($0 * 10).rounded() / 10 }
        status.updatedAt = Date()
        try writeStatus(status)
        return true
    }

    /// Whether someone asked to cancel this job.
    public func cancelRequested(_ id: String) -> Bool {
        access(path(.cancel, id), F_OK) == 0
    }

    public func finish(_ claim: Claim, _ outcome: JobOutcome) throws {
        guard holds(claim.ticket), var status = try status(claim.id) else {
            logger.warning("lost the claim; not recording the outcome", metadata: ["job": "\(claim.id)"])
            return
        }
        let now = Date()
        status.updatedAt = now
        status.worker = nil
        status.fps = nil
        status.etaSeconds = nil
        var requeue: String? = nil
        switch outcome {
        case .completed(let result):
            status.state = .completed
            status.progress = 1
            status.phase = nil
            status.result = result
            status.error = nil
            status.finishedAt = now
        case .failed(let error):
            status.error = error
            if error.retryable && status.attempts < status.maxAttempts {
                let due = now.addingTimeInterval(SpoolStore.backoff(attempt: status.attempts))
                status.state = .waiting
                status.progress = 0
                status.phase = nil
                status.notBefore = due
                let milliseconds = UInt64(due.timeIntervalSince1970 * 1000)
                requeue = path(
                    .delayed,
                    String(format: "%013llu", milliseconds) + "-"
                        + SpoolStore.waitingName(id: claim.id, priority: claim.spec.priority))
            } else {
                status.state = .failed
                status.finishedAt = now
            }
        case .cancelled:
            status.state = .cancelled
            status.error = JobError(code: "cancelled", message: "cancelled on request", retryable: false)
            status.finishedAt = now
        case .handBack:
            status.state = .waiting
            status.progress = 0
            status.phase = nil
            status.attempts = max(0, status.attempts - 1)
            requeue = path(.waiting, SpoolStore.waitingName(id: claim.id, priority: claim.spec.priority))
        }
        // Status first, then the markers: a crash in between is repaired by `recover()`.
        try writeStatus(status)
        if let requeue { try FileSystem.writeAtomically(Data(), to: requeue) }
        unlink(path(.running, claim.id))
        unlink(path(.cancel, claim.id))
        if status.state.isTerminal { unlink(path(.locks, "\(claim.id).lock")) }
        claim.lock.release()
        logger.info(
            "finished",
            metadata: [
                "job": "\(claim.id)", "state": "\(status.state.rawValue)", "error": "\(status.error?.code ?? "-")",
            ])
    }

    /// Moves retries whose backoff has passed back into the waiting queue.
    func promoteDueRetries() {
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        for name in FileSystem.names(in: path(.delayed)) where !name.hasSuffix(".tmp") {
            guard let dash = name.firstIndex(of: "-"), let due = UInt64(name[..<dash]), due <= now else { continue }
            let waitingName = String(name[name.index(after: dash)...])
            _ = rename(path(.delayed, name), path(.waiting, waitingName))
        }
    }

    /// Seconds until the next delayed retry is due, if any.
    func secondsUntilNextRetry() -> TimeInterval? {
        let now = Date().timeIntervalSince1970 * 1000
        let dues = FileSystem.names(in: path(.delayed)).compactMap { name -> Double? in
            name.firstIndex(of: "-").flatMap { Double(name[..<$0]) }
        }
        return dues.min().map { max(0, ($0 - now) / 1000) }
    }

    /// Finds jobs whose worker died (their lock is free) and puts them back in the queue, or fails them
    /// once they have used up their attempts (a poison job). Removes their temporary outputs.
    /// Returns how many jobs were recovered.
    @discardableResult
    public func recover() -> Int {
        var recovered = 0
        for id in FileSystem.names(in: path(.running)) where SpoolStore.isValidID(id) {
            guard let lock = FileLock(path: path(.locks, "\(id).lock")) else { continue }  // its owner is alive
            defer { lock.release() }
            // Re-check under the lock: the owner may have finished between the listing and the lock.
            guard access(path(.running, id), F_OK) == 0 else { continue }
            guard var status = try? status(id) else {
                unlink(path(.running, id))
                continue
            }
            if let spec = try? spec(id) { removeTemporaryOutputs(of: spec) }
            let now = Date()
            status.updatedAt = now
            status.worker = nil
            status.fps = nil
            status.etaSeconds = nil
            var marker: String? = nil
            if status.state.isTerminal {
                // Finished; only the marker was left behind.
            } else if cancelRequested(id) {
                status.state = .cancelled
                status.finishedAt = now
                status.error = JobError(code: "cancelled", message: "cancelled on request", retryable: false)
            } else if status.attempts >= status.maxAttempts {
                status.state = .failed
                status.finishedAt = now
                status.error = JobError.workerCrashed(attempts: status.attempts)
            } else {
                status.state = .waiting
                status.progress = 0
                status.phase = nil
                status.error = JobError(
                    code: "worker-crashed",
                    message: "the worker running attempt \(status.attempts) died; the job was queued again",
                    retryable: true)
                marker = path(.waiting, SpoolStore.waitingName(id: id, priority: status.priority))
            }
            do {
                try writeStatus(status)
                if let marker { try FileSystem.writeAtomically(Data(), to: marker) }
            } catch {
                logger.error("cannot recover job", metadata: ["job": "\(id)", "error": "\(error)"])
                continue
            }
            unlink(path(.running, id))
            unlink(path(.cancel, id))
            if status.state.isTerminal { unlink(path(.locks, "\(id).lock")) }
            recovered += 1
            logger.warning(
                "recovered a job from a dead worker", metadata: ["job": "\(id)", "state": "\(status.state.rawValue)"])
        }
        return recovered
    }

    /// Removes `.<name>.reel-*.partial` files an interrupted export left beside the output.
    func removeTemporaryOutputs(of spec: JobSpec) {
        let output = URL(fileURLWithPath: spec.output)
        let folder = output.deletingLastPathComponent().path
        let prefix = ".\(output.lastPathComponent).reel-"
        for name in FileSystem.names(in: folder) where name.hasPrefix(prefix) && name.hasSuffix(".partial") {
            unlink(folder + "/" + name)
        }
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
