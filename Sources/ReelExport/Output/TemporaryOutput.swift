import Foundation
import ReelSystem

/// An export's temporary file, as the atomic writer names every one (`AtomicFile.temporaryPath`):
/// `.<name>.reel-<tag>.partial`, in the destination's folder. Hidden, so nobody takes it for a
/// finished file; beside the destination, so moving it into place is a rename on one file system. Its writer holds a lock on it (`OutputLock`)
/// until it is published or discarded; every export first removes the unlocked ones a crashed export
/// of the same destination left (`removeLeftovers`), as does a queue's recovery.
public enum TemporaryOutput {
    /// The temporary file for `destination` in the attempt named by `tag` (a queued job passes
    /// `<job id>-<attempt>`; characters other than letters, digits, `-`, `_` and `.` become `_`).
    public static func url(for destination: URL, tag: String) -> URL {
        URL(fileURLWithPath: AtomicFile.temporaryPath(for: destination.path, tag: tag))
    }

    /// Whether `name`, a file name in `destination`'s folder, is a temporary file of `destination`
    /// (of any attempt).
    public static func isTemporary(_ name: String, for destination: URL) -> Bool {
        AtomicFile.isTemporary(name, for: destination.path)
    }

    /// Removes every temporary file of `destination` that interrupted exports left behind (an export
    /// killed or aborted mid-way cannot remove its own). A file whose writer is still alive holds its
    /// lock (`OutputLock`) and is left alone, so this is safe while other exports of the same
    /// destination run, in this process or another.
    public static func removeLeftovers(for destination: URL) {
        AtomicFile.removeLeftovers(for: destination.path)
    }

    /// A fresh tag for an export outside a queue: 8 random hex digits.
    public static func randomTag() -> String { AtomicFile.randomTag() }
}
