import Foundation
import ReelSpawn

extension SpoolStore {
    /// Cancels a job: a waiting job never starts; a running one is asked to stop.
    public func cancel(_ id: String) async throws -> CancelResult {
        guard let current = try status(id: id) else { return .notFound }
        if current.state.isTerminal { return .alreadyEnded(current.state) }
        guard let lock = FileLock(path: path(.locks, "\(id).lock")) else {
            // A live worker holds it: leave a request its heartbeat sees.
            try storage { try FileSystem.writeAtomically(Data(), to: path(.cancel, id)) }
            return .requested
        }
        defer { lock.release() }
        // Re-read under the lock.
        guard var status = try status(id: id) else { return .notFound }
        if status.state.isTerminal { return .alreadyEnded(status.state) }
        unlink(path(.waiting, SpoolStore.waitingName(id: id, priority: status.priority)))
        for name in FileSystem.names(in: path(.delayed)) where name.hasSuffix("-" + id) {
            unlink(path(.delayed, name))
        }
        try spec(id)?.removeTemporaryOutputs()
        status.cancelWhileWaiting(now: Date())
        try storage { try writeStatus(status) }
        unlink(path(.running, id))
        unlink(path(.cancel, id))
        unlink(path(.locks, "\(id).lock"))
        releaseTarget(of: status)
        logger.debug("cancelled", metadata: ["job": "\(id)"])
        return .cancelled
    }

    /// Puts a failed or cancelled job back in the queue with a fresh set of attempts.
    public func retry(_ id: String) async throws -> JobStatus {
        guard let lock = FileLock(path: path(.locks, "\(id).lock")) else {
            throw QueueError(.conflict, "job \(id) is running")
        }
        defer { lock.release() }
        guard var status = try status(id: id) else { throw QueueError(.notFound, "no job \(id)") }
        guard status.state == .failed || status.state == .cancelled else {
            throw QueueError(
                .conflict, "job \(id) is \(status.state.rawValue); only failed or cancelled jobs can be retried")
        }
        try reserveTarget(status.output, for: id)
        status.requeue(now: Date())
        try storage {
            try writeStatus(status)
            unlink(path(.cancel, id))
            try placeMarker(for: status, .waiting)
        }
        logger.debug("retried", metadata: ["job": "\(id)"])
        return status
    }

    /// Deletes finished jobs: their status file (and an older spool's spec file), lock, cancel request,
    /// idempotency key and output reservation, whichever exist.
    @discardableResult
    public func prune(finishedBefore cutoff: Date, states: Set<JobState>) async throws -> Int {
        var pruned = 0
        for status in all() where status.state.isTerminal && states.contains(status.state) {
            guard (status.finishedAt ?? status.updatedAt) < cutoff else { continue }
            // Under the job's lock, so a concurrent retry cannot bring it back half-deleted.
            guard let lock = FileLock(path: path(.locks, "\(status.id).lock")) else { continue }
            defer { lock.release() }
            guard let current = try? self.status(id: status.id), current.state.isTerminal,
                (current.finishedAt ?? current.updatedAt) < cutoff
            else { continue }
            if let key = current.key, let name = try? SpoolStore.keyName(key) {
                let file = path(.keys, name)
                if FileSystem.readEntry(file) == current.id { unlink(file) }
            }
            releaseTarget(of: current)
            unlink(path(.cancel, current.id))
            unlink(path(.jobs, "\(current.id).json"))
            unlink(statusFile(current.id))
            unlink(path(.locks, "\(current.id).lock"))
            pruned += 1
        }
        if pruned > 0 {
            logger.info("pruned finished jobs", metadata: ["count": "\(pruned)", "spool": "\(root.path)"])
        }
        return pruned
    }

    public func pendingWork() async throws -> PendingWork {
        PendingWork(
            waiting: hasWaitingJobs(), nextRetry: nextRetry(),
            running: FileSystem.containsName(in: path(.running)) { _ in true })
    }

    /// Whether a job is waiting to be claimed (read up to the first marker, however long the queue).
    func hasWaitingJobs() -> Bool {
        FileSystem.containsName(in: path(.waiting)) { !$0.hasSuffix(".tmp") }
    }

    /// Sleeps on inotify until a marker appears in `waiting/` (a new job, a retry promoted, a job
    /// handed back) or `timeout` passes. The blocking wait runs on a thread of its own, never on
    /// Swift's cooperative pool nor on Dispatch's shared threads.
    public func waitForWork(timeout: Duration) async {
        let watcher = self.watcher.withLock { watcher in
            if watcher == nil { watcher = DirectoryWatcher(path: path(.waiting)) }
            return watcher!
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            startThread(named: "reel-spool-watch") {
                watcher.wait(seconds: timeout.seconds)
                continuation.resume()
            }
        }
    }
}
