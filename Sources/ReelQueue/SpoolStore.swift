import Foundation
import Logging
import ReelExport

/// The embedded job store: a spool directory on one machine, shared safely by any number of worker
/// threads and processes.
///
/// Layout under the spool root:
/// - `jobs/<id>.json` — the job's spec, written once.
/// - `status/<id>.json` — the status file pollers read, always replaced atomically.
/// - `waiting/<priority>-<time>-<id>` — one empty marker per waiting job; names sort in run order.
/// - `delayed/<due>-<id>` — waiting jobs backing off after a retryable failure.
/// - `running/<id>` — claimed jobs; the content is the claim token.
/// - `locks/<id>.lock` — `flock`ed by the process running the job; the kernel drops it on death.
/// - `cancel/<id>` — a cancel request for a running job.
/// - `keys/<hex key>` — idempotency keys, each holding its job id.
public final class SpoolStore: JobStore {
    public let root: URL
    let logger = Logger(label: "reel.queue")

    enum Folder: String, CaseIterable {
        case jobs, status, waiting, delayed, running, locks, cancel, keys
    }

    /// Opens (creating if needed) the spool at `root`.
    public init(root: URL) throws {
        self.root = root.standardizedFileURL
        for folder in Folder.allCases { try FileSystem.makeFolder(path(folder)) }
    }

    /// The spool location: `--spool`, else `$REEL_SPOOL`, else `$XDG_STATE_HOME/reel`, else
    /// `~/.local/state/reel`.
    public static func defaultRoot(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
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

    // MARK: - Submit

    /// `{id}` in the spec's output path is replaced by the new job's id (unique output names).
    public func submit(_ spec: JobSpec) throws -> (status: JobStatus, created: Bool) {
        let now = Date()
        let id = SpoolStore.newID(now)
        var spec = spec
        spec.output = spec.output.replacingOccurrences(of: "{id}", with: id)
        if let key = spec.key {
            let keyPath = path(.keys, try SpoolStore.keyName(key))
            if !(try FileSystem.createExclusively(Data(id.utf8), at: keyPath)) {
                // The key exists: the job it names is the answer (wait briefly if it is being written).
                for _ in 0..<50 {
                    if let existing = FileSystem.read(keyPath).map({ String(decoding: $0, as: UTF8.self) }),
                        let status = try status(existing)
                    {
                        return (status, false)
                    }
                    usleep(10_000)
                }
                throw FileSystem.Failure(message: "the key \(key) names a job whose status cannot be read")
            }
        }
        let status = JobStatus(id: id, spec: spec, now: now)
        try FileSystem.writeAtomically(try SpoolStore.encoder.encode(spec), to: path(.jobs, "\(id).json"))
        try writeStatus(status)
        // The marker goes last: a job is claimable only once its spec and status exist.
        try FileSystem.writeAtomically(
            Data(), to: path(.waiting, SpoolStore.waitingName(id: id, priority: spec.priority)))
        logger.info("submitted", metadata: ["job": "\(id)", "preset": "\(spec.preset)", "asset": "\(spec.asset)"])
        return (status, true)
    }

    /// Job ids sort by creation time: `j` + microseconds since 1970 (13 hex digits) + 4 random hex.
    static func newID(_ now: Date) -> String {
        let microseconds = UInt64(max(0, now.timeIntervalSince1970) * 1_000_000)
        return "j" + String(format: "%013llx", microseconds) + String(format: "%04x", UInt16.random(in: 0...UInt16.max))
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

    static func keyName(_ key: String) throws -> String {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty, bytes.count <= 100 else {
            throw FileSystem.Failure(message: "an idempotency key must be 1 to 100 bytes")
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    // MARK: - Status files

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    func writeStatus(_ status: JobStatus) throws {
        try FileSystem.writeAtomically(try SpoolStore.encoder.encode(status), to: statusFile(status.id))
    }

    public func status(_ id: String) throws -> JobStatus? {
        guard SpoolStore.isValidID(id), let data = FileSystem.read(statusFile(id)) else { return nil }
        return try SpoolStore.decoder.decode(JobStatus.self, from: data)
    }

    func spec(_ id: String) throws -> JobSpec? {
        guard let data = FileSystem.read(path(.jobs, "\(id).json")) else { return nil }
        return try SpoolStore.decoder.decode(JobSpec.self, from: data)
    }

    static func isValidID(_ id: String) -> Bool {
        id.count >= 8 && id.count <= 40 && id.allSatisfy { $0.isLetter || $0.isNumber }
    }

    /// Every job's status (reads every status file; for listing, not for hot paths).
    public func all() -> [JobStatus] {
        FileSystem.names(in: path(.status)).compactMap { name -> JobStatus? in
            guard name.hasSuffix(".json") else { return nil }
            return try? status(String(name.dropLast(5)))
        }.sorted { $0.createdAt != $1.createdAt ? $0.createdAt < $1.createdAt : $0.id < $1.id }
    }
}
