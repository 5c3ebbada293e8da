import Foundation
internal import ReelMedia

/// The one definition of an export's temporary file: `.<name>.reel-<tag>.partial`, in the
/// destination's folder. Hidden, so nobody takes it for a finished file; beside the destination, so
/// moving it into place is a rename on one file system. Its writer holds a lock on it (`OutputLock`)
/// until it is published or discarded; every export first removes the unlocked ones a crashed export
/// of the same destination left (`removeLeftovers`), as does a queue's recovery.
public enum TemporaryOutput {
    /// The temporary file for `destination` in the attempt named by `tag` (a queued job passes
    /// `<job id>-<attempt>`; characters other than letters, digits, `-`, `_` and `.` become `_`).
    public static func url(for destination: URL, tag: String) -> URL {
        let safeTag = String(
            tag.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) ? $0 : "_" })
        return destination.deletingLastPathComponent().appendingPathComponent(
            prefix(for: destination) + (safeTag.isEmpty ? randomTag() : safeTag) + suffix)
    }

    /// Whether `name`, a file name in `destination`'s folder, is a temporary file of `destination`
    /// (of any attempt).
    public static func isTemporary(_ name: String, for destination: URL) -> Bool {
        let prefix = prefix(for: destination)
        return name.count > prefix.count + suffix.count && name.hasPrefix(prefix) && name.hasSuffix(suffix)
    }

    /// Removes every temporary file of `destination` that interrupted exports left behind (an export
    /// killed or aborted mid-way cannot remove its own). A file whose writer is still alive holds its
    /// lock (`OutputLock`) and is left alone, so this is safe while other exports of the same
    /// destination run, in this process or another.
    public static func removeLeftovers(for destination: URL) {
        let folder = destination.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where isTemporary(name, for: destination) {
            OutputLock.removeIfAbandoned(folder.appendingPathComponent(name).path)
        }
    }

    /// A fresh tag for an export outside a queue: 8 random hex digits.
    public static func randomTag() -> String { String(UUID().uuidString.prefix(8)) }

    private static func prefix(for destination: URL) -> String { ".\(destination.lastPathComponent).reel-" }
    private static let suffix = ".partial"
}
