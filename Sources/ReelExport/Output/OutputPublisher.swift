import Foundation
import ReelSystem

/// How an export's file appears at its destination only when complete: checks before the work,
/// a temporary name beside the destination (`TemporaryOutput`) to write to, then the atomic writer's
/// move into place and a sync of the folder (`AtomicFile`), so the name survives a crash once it is there.
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

    /// Moves the finished (fsynced) temporary file into place and syncs the folder (`AtomicFile`).
    /// Without overwrite, never replaces a file that appeared meanwhile. On a failure after the
    /// move, the destination is removed again.
    func publish() throws(ExportError) {
        try ExportError.writing { () throws(AtomicFile.Failure) in
            try AtomicFile.moveIntoPlace(temporary.path, to: destination.path, replacing: overwrite)
        }
    }

    /// Removes the temporary name (after a failure, or the extra name a link left).
    func discard() { unlink(temporary.path) }
}
