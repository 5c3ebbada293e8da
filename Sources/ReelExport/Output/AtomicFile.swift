import Foundation

/// Writes a file so it appears whole or not at all: the bytes go to a hidden temporary name beside
/// it (`TemporaryOutput`), are synced, then renamed over the name (replacing a file there only
/// when `overwrite`, otherwise `output-exists`).
public enum AtomicFile {
    public static func write(_ data: Data, to url: URL, overwrite: Bool) throws(ExportError) {
        if !overwrite, FileManager.default.fileExists(atPath: url.path) {
            throw ExportError(
                .outputExists, "\(url.path) already exists (ask to overwrite it: --overwrite)")
        }
        let temporary = TemporaryOutput.url(for: url, tag: TemporaryOutput.randomTag())
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("cannot create \(temporary.path)") }
        let ok = data.withUnsafeBytes { writeAll(fd, $0) }
        if !ok || fsync(fd) != 0 {
            let error = failure("cannot write \(url.path)")
            close(fd)
            unlink(temporary.path)
            throw error
        }
        close(fd)
        let moved: Bool
        if overwrite {
            moved = rename(temporary.path, url.path) == 0
        } else {
            // A hard link fails if the name appeared meanwhile: never replaces someone else's file.
            moved = link(temporary.path, url.path) == 0
            if moved { unlink(temporary.path) }
        }
        if !moved {
            let code = errno
            let error =
                code == EEXIST
                ? ExportError(.outputExists, "\(url.path) already exists")
                : failure("cannot move \(url.path) into place")
            unlink(temporary.path)
            throw error
        }
    }

    /// Writes every byte of `bytes` to `fd`, going on after short writes and interruptions (EINTR);
    /// false on any other failure, with `errno` set.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = Foundation.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += count
        }
        return true
    }

    /// The failure `errno` describes, for `what` (`cannot write …`): `no-space` for a full disk or
    /// quota, `output-failed` otherwise.
    package static func failure(_ what: String) -> ExportError {
        let code = errno
        let reason = String(cString: strerror(code))
        let noSpace = code == ENOSPC || code == EDQUOT
        return ExportError(noSpace ? .noSpace : .outputFailed, "\(what): \(reason)")
    }
}
