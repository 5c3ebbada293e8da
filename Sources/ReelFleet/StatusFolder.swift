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

    /// Replaces the job's status file. `durable` fsyncs it first (every change but progress).
    func write(_ status: JobStatus, durable: Bool = true) {
        let destination = path(for: status.id)
        let temporary = "\(destination).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        do {
            var status = status
            status.orphaned = nil  // only what `reel status` prints, never a status file
            let data = try JSONCoding.prettyEncoder.encode(status)
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Failure("cannot create \(temporary)") }
            var ok = data.withUnsafeBytes { buffer -> Bool in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return false
                    }
                    offset += written
                }
                return true
            }
            ok = ok && (!durable || fsync(fd) == 0)
            ok = close(fd) == 0 && ok
            guard ok, rename(temporary, destination) == 0 else { throw Failure("cannot write \(destination)") }
        } catch {
            let reason = errno == 0 ? "\(error)" : "\(error): \(String(cString: strerror(errno)))"
            unlink(temporary)
            logger.warning("cannot write a status file", metadata: ["job": "\(status.id)", "error": "\(reason)"])
        }
    }

    private struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
