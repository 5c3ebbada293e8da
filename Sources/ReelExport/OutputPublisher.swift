import Foundation

/// How an export's file appears at its destination only when complete: checks before the work,
/// a temporary name beside the destination (`TemporaryOutput`) to write to, then a link (or rename)
/// into place and a sync of the folder, so the name survives a crash once it is there.
struct OutputPublisher {
    let destination: URL
    /// Where the export writes.
    let temporary: URL
    let overwrite: Bool

    /// Checks that `destination` can be written: its folder exists, no file is there unless
    /// `overwrite`, and it is not the asset itself. Names the temporary file with `tag`.
    init(destination: URL, asset: URL, tag: String, overwrite: Bool) throws(ExportError) {
        let folder = destination.deletingLastPathComponent()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist", retryable: false)
        }
        if !overwrite, FileManager.default.fileExists(atPath: destination.path) {
            throw ExportError(.outputExists, "\(destination.path) already exists (use overwrite to replace it)")
        }
        if destination.standardizedFileURL.resolvingSymlinksInPath().path
            == asset.standardizedFileURL.resolvingSymlinksInPath().path
        {
            throw ExportError(.invalidArgument, "the output would replace the asset itself")
        }
        self.destination = destination
        self.overwrite = overwrite
        temporary = TemporaryOutput.url(for: destination, tag: tag)
    }

    /// Moves the finished (fsynced) temporary file into place and syncs the folder. Without
    /// overwrite, never replaces a file that appeared meanwhile (a hard link fails if the name
    /// exists). On a failure after the move, the destination is removed again.
    func publish() throws(ExportError) {
        if overwrite {
            if rename(temporary.path, destination.path) != 0 {
                throw ExportError(
                    .outputFailed, "cannot move the output into place: \(String(cString: strerror(errno)))")
            }
        } else if link(temporary.path, destination.path) != 0 {
            let code = errno
            if code == EEXIST { throw ExportError(.outputExists, "\(destination.path) already exists") }
            // File systems without hard links: fall back to a plain rename after a last check.
            if FileManager.default.fileExists(atPath: destination.path) {
                throw ExportError(.outputExists, "\(destination.path) already exists")
            }
            if rename(temporary.path, destination.path) != 0 {
                throw ExportError(
                    .outputFailed, "cannot move the output into place: \(String(cString: strerror(errno)))")
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
            throw ExportError(
                .outputFailed, "cannot open the output folder to sync it: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        if fsync(fd) != 0, errno != EINVAL {
            throw ExportError(.outputFailed, "cannot sync the output folder: \(String(cString: strerror(errno)))")
        }
    }
}
