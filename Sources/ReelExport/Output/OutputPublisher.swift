import Foundation

/// How an export's file appears at its destination only when complete: checks before the work,
/// a temporary name beside the destination (`TemporaryOutput`) to write to, then a link (or rename)
/// into place and a sync of the folder, so the name survives a crash once it is there.
package struct OutputPublisher {
    let destination: URL
    /// Where the export writes.
    let temporary: URL
    let overwrite: Bool

    /// Checks that `destination` can be written (`check`). Names the temporary file with `tag`.
    init(destination: URL, asset: URL, tag: String, overwrite: Bool) throws(ExportError) {
        try OutputPublisher.check(destination: destination, asset: asset, overwrite: overwrite)
        self.destination = destination
        self.overwrite = overwrite
        temporary = TemporaryOutput.url(for: destination, tag: tag)
    }

    /// The checks made before any work, the same at `reel submit` as when the export starts: the
    /// destination's folder exists (`output-failed`, not retryable), it is not the asset itself
    /// (`invalid-argument`), and no file is there unless `overwrite` (`output-exists`).
    package static func check(destination: URL, asset: URL, overwrite: Bool) throws(ExportError) {
        let folder = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist", retryable: false)
        }
        if destination.standardizedFileURL.resolvingSymlinksInPath().path
            == asset.standardizedFileURL.resolvingSymlinksInPath().path
        {
            throw ExportError(.invalidArgument, "the output would replace the asset itself")
        }
        if !overwrite, FileManager.default.fileExists(atPath: destination.path) {
            throw ExportError(
                .outputExists,
                "\(destination.path) already exists (ask to overwrite it: --overwrite, \"overwrite\": true)")
        }
    }

    /// `error` as the caller should read it: the hidden temporary name, where it appears, replaced by
    /// the destination the caller named.
    func naming(_ error: ExportError) -> ExportError {
        let message = error.message.replacingOccurrences(of: temporary.path, with: destination.path)
            .replacingOccurrences(of: temporary.lastPathComponent, with: destination.lastPathComponent)
        return message == error.message ? error : ExportError(error.code, message, retryable: error.isRetryable)
    }

    /// Moves the finished (fsynced) temporary file into place and syncs the folder. Without
    /// overwrite, never replaces a file that appeared meanwhile (a hard link fails if the name
    /// exists). On a failure after the move, the destination is removed again.
    func publish() throws(ExportError) {
        if overwrite {
            if rename(temporary.path, destination.path) != 0 {
                throw OutputPublisher.failure("cannot move the output into place at \(destination.path)")
            }
        } else if link(temporary.path, destination.path) != 0 {
            let code = errno
            if code == EEXIST { throw ExportError(.outputExists, "\(destination.path) already exists") }
            // File systems without hard links: fall back to a plain rename after a last check.
            if FileManager.default.fileExists(atPath: destination.path) {
                throw ExportError(.outputExists, "\(destination.path) already exists")
            }
            if rename(temporary.path, destination.path) != 0 {
                throw OutputPublisher.failure("cannot move the output into place at \(destination.path)")
            }
        }
        do throws(ExportError) {
            try syncFolder()
        } catch {
            unlink(destination.path)
            throw error
        }
    }

    /// Removes the temporary name (after a failure, or the extra name a link left).
    func discard() { unlink(temporary.path) }

    /// fsync on the folder makes the new name durable; a file system that cannot sync a folder
    /// (EINVAL) has nothing to make durable that way.
    private func syncFolder() throws(ExportError) {
        let folder = destination.deletingLastPathComponent().path
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            throw OutputPublisher.failure("cannot open the output folder \(folder) to sync it")
        }
        defer { close(fd) }
        if fsync(fd) != 0, errno != EINVAL {
            throw OutputPublisher.failure("cannot sync the output folder \(folder)")
        }
    }

    /// `output-failed` with `what` and errno's reason (read before `what` is built).
    private static func failure(_ what: @autoclosure () -> String) -> ExportError {
        let reason = String(cString: strerror(errno))
        return ExportError(.outputFailed, "\(what()): \(reason)")
    }
}
