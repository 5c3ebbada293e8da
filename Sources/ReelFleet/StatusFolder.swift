import Foundation
import Logging
import ReelExport
import ReelQueue

/// The status files of a fleet: `<folder>/<id>.json`, the same schema the spool writes, each replaced
/// atomically (a temporary file in the same folder, then a rename) so a poller on any machine never
/// reads half a file. Whoever changes a job writes its file; a failed write is logged, never fatal
/// (the database is the truth, and the next change writes the file again).
struct StatusFolder: Sendable {
    let path: String
    let logger: Logger

    init(path: String, logger: Logger) throws(QueueError) {
        self.path = URL(fileURLWithPath: path).standardizedFileURL.path
        self.logger = logger
        do {
            try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
        } catch {
            throw QueueError(
                .unavailable, "cannot create the status folder \(self.path): \(error.localizedDescription)")
        }
    }

    func path(for id: String) -> String { "\(path)/\(id).json" }

    /// Replaces the job's status file (`FileSystem.writeStatusFile`, as the spool writes its own).
    /// `durable` fsyncs it first (every change but progress).
    func write(_ status: JobStatus, durable: Bool = true) {
        do {
            try FileSystem.writeStatusFile(status, to: path(for: status.id), durable: durable)
        } catch {
            logger.warning("cannot write a status file", metadata: ["job": "\(status.id)", "error": "\(error)"])
        }
    }
}
