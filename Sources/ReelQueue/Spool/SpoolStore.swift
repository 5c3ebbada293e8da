import Foundation
import Logging
import ReelExport
import ReelSystem
import Synchronization

/// The embedded job store: a spool directory on one machine, shared safely by any number of worker
/// threads and processes.
///
/// Layout under the spool root:
/// - `jobs/<id>.json` — the job's spec, written once (spools before 0.3).
/// - `jobs/<id>.credential` — a remote asset's URL query (a presigned signature), mode 0600, written
///   once: kept out of the status file, which anyone who may poll reads.
/// - `status/<id>.json` — the status file pollers read, always replaced atomically.
/// - `waiting/<priority>-<id>` — one empty marker per waiting job; names sort in run order.
/// - `delayed/<due>-<priority>-<id>` — waiting jobs backing off after a retryable failure.
/// - `running/<id>` — claimed jobs; the content is the claim's fencing token.
/// - `locks/<id>.lock` — `flock`ed by the process running the job; the kernel drops it on death.
/// - `cancel/<id>` — a cancel request for a running job.
/// - `keys/<hex key>` — idempotency keys, each a symbolic link to its job id (a file holding it in
///   spools written before 0.2.1).
/// - `targets/<hash of output path>` — the output path of each waiting or running job, a symbolic
///   link to its job id: two such jobs never write one file.
///
/// The status file also carries the job's spec; spools from before kept it in `jobs/<id>.json`,
/// which is still read.
///
/// A lease is the job's `flock` plus the token in its running marker: it lasts exactly as long as the
/// worker process (so `leaseDuration` is nil), and `rescueExpired` finds a dead worker's jobs by
/// their free locks.
public final class SpoolStore: JobStore {
    public let root: URL
    let logger: Logger
    /// The locks of the jobs this instance has claimed, by lease token.
    let heldLocks = Mutex<[String: FileLock]>([:])
    /// Watches `waiting/` for new markers (created on first use by a worker).
    let watcher = Mutex<DirectoryWatcher?>(nil)
    /// When a running job's status file is rewritten (progress at most four times a second, a
    /// heartbeat at least every 5 s).
    let statusSchedule = StatusFileSchedule(renewInterval: SpoolStore.renewInterval)
    /// Where every method's file work runs: never on Swift's cooperative pool (`BlockingIO`).
    let io = BlockingIO.shared

    public var location: String { "spool \(root.path)" }
    /// Progress is written at most four times a second; a cancel request is seen within this time.
    public var renewInterval: Duration { Self.renewInterval }
    private static let renewInterval = StatusFileSchedule.fastest
    public var leaseDuration: Duration? { nil }
    /// How long a retryable failure waits before its next attempt.
    public let retryBackoff: RetryBackoff

    enum Folder: String, CaseIterable {
        case jobs, status, waiting, delayed, running, locks, cancel, keys, targets
    }

    /// Opens the spool at `root`. With `create` (submitting, working) a missing spool is made;
    /// without it (reading commands) a missing spool is an error naming it.
    /// `retryBackoff` decides how long a retryable failure waits before its next attempt.
    public init(
        root: URL, create: Bool = true, retryBackoff: RetryBackoff = .standard,
        logger: Logger = Logger(label: "reel.queue")
    ) throws(QueueError) {
        self.root = root.standardizedFileURL
        self.retryBackoff = retryBackoff
        self.logger = logger
        if create {
            for folder in Folder.allCases {
                do {
                    try FileSystem.makeFolder(path(folder))
                } catch {
                    throw QueueError(.unavailable, "cannot create the spool at \(self.root.path): \(error.message)")
                }
            }
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path(.status), isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                throw QueueError(
                    .unavailable,
                    "there is no spool at \(self.root.path) (submit a job or start a worker to create it; see --spool)")
            }
        }
    }

    /// The spool location: `--spool`, else `$REEL_SPOOL`, else `$XDG_STATE_HOME/reel`, else
    /// `~/.local/state/reel`.
    public static func defaultRoot(environment: [String: String]) -> URL {
        if let spool = environment["REEL_SPOOL"], !spool.isEmpty { return URL(fileURLWithPath: spool) }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty {
            return URL(fileURLWithPath: state).appendingPathComponent("reel")
        }
        let home =
            environment["HOME"].map { URL(fileURLWithPath: $0) } ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/state/reel")
    }

    func path(_ folder: Folder) -> String { root.appendingPathComponent(folder.rawValue).path }
    func path(_ folder: Folder, _ name: String) -> String { path(folder) + "/" + name }
    /// The status file of a job.
    public func statusFile(_ id: String) -> String { path(.status, "\(id).json") }
    public func statusFile(for id: String) -> String? { statusFile(id) }

    // MARK: - Submit

    /// `{id}` in the spec's output path is replaced by the new job's id (unique output names).
    public func submit(_ spec: JobSpec) async throws -> Submission {
        switch try await io.run({ () throws(QueueError) in try self.submitNow(spec) }) {
        case .created(let submission): return submission
        case .keyTaken(let key, let file): return try await existing(key: key, file: file, request: spec)
        }
    }

    private enum Submitted: Sendable {
        case created(Submission)
        /// The idempotency key names a job already, at `file`.
        case keyTaken(String, String)
    }

    private func submitNow(_ spec: JobSpec) throws(QueueError) -> Submitted {
        let now = Date()
        let id = JobStatus.newID(now)
        var spec = spec
        spec.output = spec.output.replacingOccurrences(of: "{id}", with: id)
        var keyFile: String?
        if let key = spec.key {
            let file = path(.keys, try SpoolStore.keyName(key))
            if !(try storage { try FileSystem.createEntry(id, at: file) }) { return .keyTaken(key, file) }
            keyFile = file
        }
        do {
            try reserveTarget(spec.output, for: id)
        } catch {
            if let keyFile { unlink(keyFile) }
            throw error
        }
        let status = JobStatus(id: id, spec: spec, now: now)
        try storage {
            // The credential first: a job is never claimable without it.
            if let query = spec.remote?.query { try Self.writeCredential(query, to: path(.jobs, "\(id).credential")) }
            try writeStatus(status)
            // The marker goes last: a job is claimable only once its status exists.
            try FileSystem.writeAtomically(
                Data(), to: path(.waiting, SpoolStore.waitingName(id: id, priority: spec.priority)))
        }
        logger.debug("submitted", metadata: ["job": "\(id)", "preset": "\(spec.preset)", "asset": "\(spec.asset)"])
        return .created(Submission(status: status, created: true))
    }

    /// The job an idempotency key already names: returned when it was asked for with the same request,
    /// a conflict naming the job and the differing fields otherwise.
    private func existing(key: String, file: String, request: JobSpec) async throws -> Submission {
        // Wait briefly if the job is still being written.
        for _ in 0..<50 {
            let found = try await io.run { () throws(QueueError) -> JobStatus? in
                guard let named = FileSystem.readEntry(file) else { return nil }
                return try self.status(id: named)
            }
            if let status = found {
                let submitted = status.spec ?? JobSpec(status)
                let differences = submitted.differences(from: request, id: status.id)
                guard differences.isEmpty else {
                    throw QueueError(
                        .conflict,
                        "the key '\(key)' already names job \(status.id) (\(status.state.rawValue)), which differs in "
                            + differences.joined(separator: ", ")
                            + "; use a new key for a different export, or 'reel retry \(status.id)' to run that job again"
                    )
                }
                return Submission(status: status, created: false)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw QueueError(.conflict, "the key '\(key)' names a job whose status cannot be read")
    }

    /// Waiting markers sort by priority (higher first), then by id (submission time).
    static func waitingName(id: String, priority: Int) -> String {
        let clamped = max(-99_999, min(99_999, priority))
        return String(format: "%06d", 100_000 - clamped) + "-" + id
    }

    static func id(fromMarker name: String) -> String? {
        guard let id = name.split(separator: "-").last.map(String.init), isValidID(id) else { return nil }
        return id
    }

    static func keyName(_ key: String) throws(QueueError) -> String {
        if let refusal = JobSpec.refuseKey(key) { throw refusal }
        return Array(key.utf8).map { String(format: "%02x", $0) }.joined()
    }

    // MARK: - Status files

    /// Writes a status file atomically. `durable` fsyncs it first (claims, outcomes, submits);
    /// progress-only updates skip that: a rename alone keeps readers from seeing half a file, and a
    /// crash that loses a progress tick loses nothing that matters.
    func writeStatus(_ status: JobStatus, durable: Bool = true) throws(FileSystem.Failure) {
        try FileSystem.writeStatusFile(status, to: statusFile(status.id), durable: durable)
    }

    public func status(_ id: String) async throws -> JobStatus? {
        try await io.run { () throws(QueueError) in try self.status(id: id).map(self.markingOrphan) }
    }

    /// Sets `orphaned` on an exporting job whose lock nobody holds (its worker died; no live worker
    /// has rescued it yet).
    func markingOrphan(_ status: JobStatus) -> JobStatus {
        guard status.state == .exporting, let lock = FileLock(path: path(.locks, "\(status.id).lock")) else {
            return status
        }
        lock.release()
        var orphan = status
        orphan.orphaned = true
        return orphan
    }

    func status(id: String) throws(QueueError) -> JobStatus? {
        guard SpoolStore.isValidID(id), let data = FileSystem.read(statusFile(id)) else { return nil }
        do {
            return try JSONCoding.decoder.decode(JobStatus.self, from: data)
        } catch {
            throw QueueError(.unavailable, "the status file of \(id) cannot be read: \(error)")
        }
    }

    func spec(_ id: String) throws(QueueError) -> JobSpec? {
        if var spec = try status(id: id)?.spec {
            // A remote asset's query is in its credential file, not in the status file.
            if spec.remote?.lacksQuery == true {
                guard let data = FileSystem.read(path(.jobs, "\(id).credential")) else {
                    throw QueueError(.unavailable, "the credential of \(id)'s URL is missing from the spool")
                }
                spec.remote?.query = String(decoding: data, as: UTF8.self)
            }
            return spec
        }
        guard let data = FileSystem.read(path(.jobs, "\(id).json")) else { return nil }
        do {
            return try JSONCoding.decoder.decode(JobSpec.self, from: data)
        } catch {
            throw QueueError(.unavailable, "the spec of \(id) cannot be read: \(error)")
        }
    }

    /// Writes a remote asset's query where only the spool's owner reads it (0600), durably.
    static func writeCredential(_ query: String, to path: String) throws(FileSystem.Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .errno("cannot create", path) }
        let written = Array(query.utf8).withUnsafeBytes { AtomicFile.writeAll(fd, $0) }
        let synced = written && fsync(fd) == 0
        close(fd)
        guard synced else {
            unlink(path)
            throw .errno("cannot write", path)
        }
    }

    static func isValidID(_ id: String) -> Bool {
        id.count >= 8 && id.count <= 40 && id.allSatisfy { $0.isLetter || $0.isNumber }
    }

    /// Every job's status (reads every status file; for listing, not for hot paths).
    public func list(state: JobState? = nil) async throws -> [JobStatus] {
        await io.run { self.all(state: state).map(self.markingOrphan) }
    }

    func all(state: JobState? = nil) -> [JobStatus] {
        FileSystem.names(in: path(.status)).compactMap { name -> JobStatus? in
            guard name.hasSuffix(".json"), let status = try? status(id: String(name.dropLast(5))) else { return nil }
            return state == nil || status.state == state ? status : nil
        }.sorted { $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : $0.id < $1.id }
    }

    /// Runs file-system work, turning its failures into the store's error.
    func storage<T>(_ body: () throws -> T) throws(QueueError) -> T {
        do {
            return try body()
        } catch let failure as FileSystem.Failure {
            throw QueueError(.unavailable, failure.message)
        } catch {
            throw QueueError(.unavailable, "\(error)")
        }
    }
}
