import CReelSystem
import Foundation
import Synchronization

/// How every file and folder Reel writes appears at its name: whole or not at all. Exports, posters,
/// thumbnails, ladders' folders, status files, spool entries and library resources all go through
/// here, so they share one set of rules:
///
/// - The bytes go to a hidden temporary name beside the destination (`.<name>.reel-<tag>.partial`, on
///   the same file system, so the move is a rename), created exclusively.
/// - Every byte is written (short writes and EINTR go on), then the file is fsynced.
/// - It moves into place in one step. Replacing, with rename(2). Not replacing, it never takes a name
///   that appeared meanwhile: renameat2(RENAME_NOREPLACE) where the file system has it, else a hard
///   link (which fails on an existing name), else, where neither exists, a check then a rename.
/// - The folder is fsynced, so the new name survives a crash (status files skip this: their
///   contract is the old content or the new after a power cut).
/// - A temporary name left by a writer that died is removed by the next writer of that destination
///   (`removeLeftovers`); a live writer's is not (it holds `OutputLock` on it).
///
/// Folders (a ladder, a thumbnail set) are built under a temporary name and moved into place with one
/// renameat2(RENAME_NOREPLACE), so a folder can never replace one, even an empty one, that appeared
/// meanwhile (rename(2) would).
public enum AtomicFile {
    /// Why a write or a move failed: errno's code and a message naming the path.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// errno when it failed (EEXIST when the destination's name was taken).
        public let code: Int32
        /// What failed and why (`cannot write /srv/out/a.mp4: No space left on device`).
        public let message: String
        public var description: String { message }
        /// The destination's name was taken (and was not to be replaced).
        public var isExisting: Bool { code == EEXIST || code == ENOTEMPTY }
        /// A full disk or quota.
        public var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }

        /// The failure `errno` describes (read first), for `what` (`cannot write …`).
        static func errno(_ what: @autoclosure () -> String) -> Failure {
            let code = Glibc.errno
            return Failure(code: code, message: "\(what()): \(String(cString: strerror(code)))")
        }

        static func existing(_ path: String) -> Failure { Failure(code: EEXIST, message: "\(path) already exists") }
    }

    // MARK: Temporary names

    /// The temporary name for `destination` in the attempt named by `tag`: `.<name>.reel-<tag>.partial`
    /// beside it (characters of `tag` other than letters, digits, `-`, `_` and `.` become `_`).
    public static func temporaryPath(for destination: String, tag: String = randomTag()) -> String {
        let safeTag = String(
            tag.prefix(64).map { $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) ? $0 : "_" })
        let (folder, name) = split(destination)
        return folder + "/" + prefix(for: name) + (safeTag.isEmpty ? randomTag() : safeTag) + suffix
    }

    /// Whether `name`, a name in `destination`'s folder, is a temporary name of `destination` (of any
    /// attempt).
    public static func isTemporary(_ name: String, for destination: String) -> Bool {
        let prefix = prefix(for: split(destination).name)
        return name.count > prefix.count + suffix.count && name.hasPrefix(prefix) && name.hasSuffix(suffix)
    }

    /// Whether `name` is any writer's temporary name (a spool listing skips them).
    public static func isTemporary(_ name: String) -> Bool {
        name.hasPrefix(".") && name.hasSuffix(suffix) && name.contains(".reel-")
    }

    /// Removes every temporary name of `destination` that a writer killed mid-way left; a live writer's
    /// (its `OutputLock` held, in this process or another) is left alone.
    public static func removeLeftovers(for destination: String) {
        let folder = split(destination).folder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where isTemporary(name, for: destination) {
            OutputLock.removeIfAbandoned(folder + "/" + name)
        }
    }

    /// 8 random hex digits.
    public static func randomTag() -> String { String(UUID().uuidString.prefix(8)) }

    private static let suffix = ".partial"
    private static func prefix(for name: String) -> String { ".\(name).reel-" }

    /// `/a/b/c.mp4` → (`/a/b`, `c.mp4`); a bare name's folder is `.`.
    private static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = String(path[..<slash])
        return (folder.isEmpty ? "/" : folder, String(path[path.index(after: slash)...]))
    }

    // MARK: Writing

    /// Writes `bytes` to `destination` whole: a temporary name beside it, every byte, fsynced when
    /// `syncFile`, moved into place (over an existing file only when `replacing`, else `isExisting`),
    /// the folder fsynced when `syncFolder`. On any failure nothing is left at either name.
    public static func write(
        _ bytes: some ContiguousBytes, to destination: String, replacing: Bool, syncFile: Bool = true,
        syncFolder: Bool = true
    ) throws(Failure) {
        if !replacing, FileManager.default.fileExists(atPath: destination) { throw .existing(destination) }
        let temporary = temporaryPath(for: destination)
        try writeNew(bytes, at: temporary, sync: syncFile)
        do throws(Failure) {
            try moveIntoPlace(temporary, to: destination, replacing: replacing, syncFolder: syncFolder)
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Creates `path` (which must not exist) with `bytes`, fsynced when `sync`; removes it again on a
    /// failure. For a file published later (`moveIntoPlace`), such as a poster beside its video.
    public static func writeNew(_ bytes: some ContiguousBytes, at path: String, sync: Bool = true) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .errno("cannot create \(path)") }
        let written = bytes.withUnsafeBytes { writeAll(fd, $0) }
        var failure = written ? nil : Failure.errno("cannot write \(path)")
        if failure == nil, sync, fsync(fd) != 0 { failure = .errno("cannot sync \(path)") }
        if close(fd) != 0, failure == nil { failure = .errno("cannot write \(path)") }
        if let failure {
            unlink(path)
            throw failure
        }
    }

    /// Writes every byte of `bytes` to `fd`, going on after short writes and interruptions (EINTR);
    /// false on any other failure, with `errno` set.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += count
        }
        return true
    }

    // MARK: Moving into place

    /// Moves the finished (fsynced) file `temporary` to `destination` and fsyncs the folder when
    /// `syncFolder`. Without `replacing`, never takes a name that appeared meanwhile (`isExisting`).
    /// On a failure after the move, the destination is removed again; `temporary` is the caller's to
    /// remove.
    public static func moveIntoPlace(
        _ temporary: String, to destination: String, replacing: Bool, syncFolder: Bool = true
    ) throws(Failure) {
        if replacing {
            guard rename(temporary, destination) == 0 else {
                throw .errno("cannot move \(destination) into place")
            }
        } else {
            try moveWithoutReplacing(temporary, to: destination, allowLink: true)
        }
        guard syncFolder else { return }
        do throws(Failure) {
            try self.syncFolder(containing: destination)
        } catch {
            unlink(destination)
            throw error
        }
    }

    /// Moves the finished folder `folder` to `destination` in one step, its names synced first and the
    /// new name synced after. Without `replacing`, an
    /// existing destination, even an empty folder, is `isExisting`. With it, an existing destination
    /// is moved aside first and removed once the new folder is in place (put back if the move fails).
    public static func moveFolderIntoPlace(_ folder: String, to destination: String, replacing: Bool) throws(Failure) {
        // The names inside, written without a sync each, become durable with the folder.
        try syncFolder(at: folder)
        var aside: String?
        if replacing, FileManager.default.fileExists(atPath: destination) {
            let old = temporaryPath(for: destination, tag: "replaced-" + randomTag())
            guard rename(destination, old) == 0 else { throw .errno("cannot move the old \(destination) aside") }
            aside = old
        }
        do throws(Failure) {
            try moveWithoutReplacing(folder, to: destination, allowLink: false)
        } catch {
            if let aside { _ = rename(aside, destination) }
            throw error
        }
        if let aside { try? FileManager.default.removeItem(atPath: aside) }
        try syncFolder(containing: destination)
    }

    /// renameat2(RENAME_NOREPLACE); where the file system lacks it, a hard link (files only; it too
    /// fails on a taken name), and where that is missing too, a check and a rename.
    private static func moveWithoutReplacing(_ from: String, to destination: String, allowLink: Bool) throws(Failure) {
        let plain = plainFileSystem.load(ordering: .relaxed)
        if !plain, reel_rename_noreplace(from, destination) == 0 { return }
        var code = plain ? EINVAL : errno
        if code == EEXIST || code == ENOTEMPTY { throw .existing(destination) }
        guard code == EINVAL || code == ENOSYS || code == ENOTSUP || code == EOPNOTSUPP else {
            throw .errno("cannot move \(destination) into place")
        }
        if allowLink, !plain {
            if link(from, destination) == 0 {
                unlink(from)
                return
            }
            code = errno
            if code == EEXIST { throw .existing(destination) }
        }
        var status = stat()
        if lstat(destination, &status) == 0 { throw .existing(destination) }
        guard rename(from, destination) == 0 else { throw .errno("cannot move \(destination) into place") }
    }

    /// For tests: behave as on a file system with neither renameat2's RENAME_NOREPLACE nor hard links
    /// (FAT, some network file systems), which only a check and a rename can serve.
    package static let plainFileSystem = Atomic<Bool>(false)

    /// fsync on the folder that holds `path`, which makes its new name durable; a file system that
    /// cannot sync a folder (EINVAL) has nothing to make durable that way.
    public static func syncFolder(containing path: String) throws(Failure) {
        try syncFolder(at: split(path).folder)
    }

    /// fsync on the folder `folder` itself (the names in it).
    public static func syncFolder(at folder: String) throws(Failure) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .errno("cannot open the folder \(folder) to sync it") }
        defer { close(fd) }
        if fsync(fd) != 0, errno != EINVAL { throw .errno("cannot sync the folder \(folder)") }
    }
}
