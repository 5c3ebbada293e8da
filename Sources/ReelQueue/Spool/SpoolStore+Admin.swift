import Foundation

extension SpoolStore {
    /// Cancels a job: a waiting job never starts; a running one is asked to stop.
    public func cancel(_ id: String) async throws -> CancelResult {
        try await io.run { () throws(QueueError) in try self.cancelNow(id) }
    }

    private func cancelNow(_ id: String) throws(QueueError) -> CancelResult {
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
        logger.debug("cancelled a waiting job", metadata: ["job": "\(id)"])
        return .cancelled
    }

    /// Puts a failed or cancelled job back in the queue with a fresh set of attempts.
    public func retry(_ id: String) async throws -> JobStatus {
        try await io.run { () throws(QueueError) in try self.retryNow(id) }
    }

    private func retryNow(_ id: String) throws(QueueError) -> JobStatus {
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
        await io.run { self.pruneNow(finishedBefore: cutoff, states: states) }
    }

    private func pruneNow(finishedBefore cutoff: Date, states: Set<JobState>) -> Int {
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
            unlink(path(.jobs, "\(current.id).credential"))
            unlink(statusFile(current.id))
            unlink(path(.locks, "\(current.id).lock"))
            pruned += 1
        }
        if pruned > 0 {
            logger.info(
                "pruned finished jobs", metadata: ["count": .stringConvertible(pruned), "spool": "\(root.path)"])
        }
        return pruned
    }

    public func pendingWork() async throws -> PendingWork {
        await io.run {
            PendingWork(
                waiting: self.hasWaitingJobs(), nextRetry: self.nextRetry(),
                running: FileSystem.containsName(in: self.path(.running)) { _ in true })
        }
    }

    /// Whether a job is waiting to be claimed (read up to the first marker, however long the queue).
    func hasWaitingJobs() -> Bool {
        FileSystem.containsName(in: path(.waiting), matching: FileSystem.isEntry)
    }

    /// Sleeps until a marker appears in `waiting/` (a new job, a retry promoted, a job handed back) or
    /// `timeout` passes. One long-lived thread per spool waits on inotify (`DirectoryWatcher`); this
    /// task holds no thread meanwhile.
    public func waitForWork(timeout: Duration) async {
        let watcher = self.watcher.withLock { watcher in
            if watcher == nil { watcher = DirectoryWatcher(path: path(.waiting)) }
            return watcher!
        }
        await watcher.wait(timeout: timeout)
    }
}
