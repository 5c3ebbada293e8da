import Foundation

extension SpoolStore {
    /// What `cancel` did.
    public enum CancelResult: Sendable, Equatable {
        /// The job was waiting (or its worker was dead) and is now cancelled.
        case cancelled
        /// The job is running; its worker was asked to stop and will mark it cancelled.
        case requested
        /// The job had already ended in this state.
        case alreadyEnded(JobState)
        case notFound
    }

    /// Cancels a job: a waiting job never starts; a running one is asked to stop.
    public func cancel(_ id: String) throws -> CancelResult {
        guard let current = try status(id) else { return .notFound }
        if current.state.isTerminal { return .alreadyEnded(current.state) }
        guard let lock = FileLock(path: path(.locks, "\(id).lock")) else {
            // A live worker holds it: leave a request it polls.
            try FileSystem.writeAtomically(Data(), to: path(.cancel, id))
            return .requested
        }
        defer { lock.release() }
        // Re-read under the lock.
        guard var status = try status(id) else { return .notFound }
        if status.state.isTerminal { return .alreadyEnded(status.state) }
        unlink(path(.waiting, SpoolStore.waitingName(id: id, priority: status.priority)))
        for name in FileSystem.names(in: path(.delayed)) where name.hasSuffix("-" + id) { unlink(path(.delayed, name)) }
        if let spec = try spec(id) { removeTemporaryOutputs(of: spec) }
        status.state = .cancelled
        status.error = JobError(code: "cancelled", message: "cancelled on request", retryable: false)
        status.finishedAt = Date()
        status.updatedAt = Date()
        status.worker = nil
        try writeStatus(status)
        unlink(path(.running, id))
        unlink(path(.cancel, id))
        unlink(path(.locks, "\(id).lock"))
        logger.info("cancelled", metadata: ["job": "\(id)"])
        return .cancelled
    }

    /// Puts a failed or cancelled job back in the queue with a fresh set of attempts.
    public func retry(_ id: String) throws -> JobStatus? {
        guard let lock = FileLock(path: path(.locks, "\(id).lock")) else {
            throw FileSystem.Failure(message: "job \(id) is running")
        }
        defer { lock.release() }
        guard var status = try status(id) else { return nil }
        guard status.state == .failed || status.state == .cancelled else {
            throw FileSystem.Failure(
                message: "job \(id) is \(status.state.rawValue); only failed or cancelled jobs can be retried")
        }
        status.state = .waiting
        status.attempts = 0
        status.progress = 0
        status.phase = nil
        status.error = nil
        status.result = nil
        status.finishedAt = nil
        status.startedAt = nil
        status.notBefore = nil
        status.updatedAt = Date()
        try writeStatus(status)
        unlink(path(.cancel, id))
        try FileSystem.writeAtomically(
            Data(), to: path(.waiting, SpoolStore.waitingName(id: id, priority: status.priority)))
        logger.info("retried", metadata: ["job": "\(id)"])
        return status
    }

    /// Whether any job is waiting (now or after a backoff) or running.
    public func hasPendingWork() -> Bool {
        hasWaitingJobs()
            || FileSystem.containsName(in: path(.delayed)) { !$0.hasSuffix(".tmp") }
            || FileSystem.containsName(in: path(.running)) { _ in true }
    }

    /// Whether a job is waiting to be claimed (read up to the first marker, however long the queue).
    public func hasWaitingJobs() -> Bool {
        FileSystem.containsName(in: path(.waiting)) { !$0.hasSuffix(".tmp") }
    }

    /// The folder workers watch for new jobs.
    public var waitingFolder: String { path(.waiting) }
}
