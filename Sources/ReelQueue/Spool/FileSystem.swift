import Foundation
import ReelExport
import ReelSystem
import Synchronization

/// Small POSIX helpers the spool is built on: atomic replacement, exclusive creation, file locks and
/// fast directory listing. Every store writes its status files with `writeStatusFile`.
package enum FileSystem {
    package struct Failure: Error, CustomStringConvertible {
        var message: String
        package var description: String { message }
        static func errno(_ what: String, _ path: String) -> Failure {
            Failure(message: "\(what) \(path): \(String(cString: strerror(Glibc.errno)))")
        }
    }

    /// Replaces `path` atomically (`AtomicFile`): a temporary file beside it, fsynced when `durable`,
    /// renamed over it; the folder is not synced, so the rename itself may be lost to a crash. A
    /// reader sees the old content or the new, never a mix.
    package static func writeAtomically(_ data: Data, to path: String, durable: Bool = true) throws(Failure) {
        do {
            try AtomicFile.write(data, to: path, replacing: true, syncFile: durable, syncFolder: false)
        } catch {
            throw Failure(message: error.message)
        }
    }

    /// Whether `name` in a spool folder is an entry, not a writer's temporary file (`AtomicFile`'s, or
    /// or the `.tmp` names older spools used).
    static func isEntry(_ name: String) -> Bool { !name.hasSuffix(".tmp") && !AtomicFile.isTemporary(name) }

    /// Replaces the status file at `path` with `status` (the schema README documents; `orphaned`, which
    /// only `reel status` prints, left out) atomically. `durable` fsyncs it first: every change but
    /// progress, whose loss in a crash costs nothing the next update does not replace.
    package static func writeStatusFile(_ status: JobStatus, to path: String, durable: Bool) throws(Failure) {
        var status = status
        status.orphaned = nil
        let data: Data
        do {
            data = try JSONCoding.prettyEncoder.encode(status)
        } catch {
            throw Failure(message: "cannot encode the status of \(status.id): \(error)")
        }
        try writeAtomically(data, to: path, durable: durable)
    }

    /// Creates `path` as a symbolic link holding `value` (a job id) only if the name is free; returns
    /// false if it is taken (symlink(2) fails with EEXIST: an atomic "create if absent"). A short value
    /// lives in the inode itself: no data block (4 KiB on most file systems), where a small file takes one.
    static func createEntry(_ value: String, at path: String) throws(Failure) -> Bool {
        if symlink(value, path) == 0 { return true }
        if errno == EEXIST { return false }
        throw .errno("cannot create", path)
    }

    /// What an entry holds: a symbolic link's value, or (as older spools wrote them) a file's content.
    static func readEntry(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        if count >= 0 {
            return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        guard errno == EINVAL else { return nil }
        return read(path).map { String(decoding: $0, as: UTF8.self) }
    }

    static func read(_ path: String) -> Data? {
        FileManager.default.contents(atPath: path)
    }

    /// Names in a folder, unsorted, without `.` and `..` (readdir; fast on large folders).
    static func names(in folder: String) -> [String] {
        var names: [String] = []
        forEachName(in: folder) { name in
            names.append(name)
            return true
        }
        return names
    }

    /// Whether the folder has an entry `matching` accepts; stops reading at the first one.
    static func containsName(in folder: String, matching: (String) -> Bool) -> Bool {
        var found = false
        forEachName(in: folder) { name in
            found = matching(name)
            return !found
        }
        return found
    }

    /// Calls `body` with each entry's name (not `.` and `..`) until it returns false.
    private static func forEachName(in folder: String, _ body: (String) -> Bool) {
        guard let directory = opendir(folder) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != "..", !body(name) { return }
        }
    }

    /// Creates a folder and its missing parents (`mkdir -p`), with errors in plain words
    /// ("cannot create /srv/spool: Permission denied").
    static func makeFolder(_ path: String) throws(Failure) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if isDirectory.boolValue { return }
            throw Failure(message: "cannot create \(path): a file of that name is in the way")
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path { try makeFolder(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw .errno("cannot create", path) }
    }
}

/// An exclusive `flock` on a file, held as long as this object lives (or until `release()`).
///
/// The kernel drops the lock when the process dies, however it dies: a lock that can be taken means
/// nobody is running the job. Locks are per open file, so two threads of one process exclude each
/// other too.
final class FileLock: Sendable {
    private let descriptor: Atomic<Int32>

    /// Takes the lock; without `wait`, nil if someone else holds it; with `wait`, blocks until it is
    /// free (for short critical sections only).
    init?(path: String, wait: Bool = false) {
        // A failable class initializer that returns nil after setting every property still runs
        // deinit: failure paths go through `release()`, which closes the descriptor exactly once (a
        // second close could close another thread's newly opened file).
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        descriptor = Atomic(fd)
        guard fd >= 0 else { return nil }
        var locked: Int32
        repeat { locked = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) } while locked != 0 && wait && errno == EINTR
        if locked != 0 {
            release()
            return nil
        }
        // The file may have been unlinked (a finished job) between open and flock: a lock on a file
        // that no longer has this name protects nothing.
        var held = stat()
        var named = stat()
        if fstat(fd, &held) != 0 || stat(path, &named) != 0 || held.st_ino != named.st_ino
            || held.st_dev != named.st_dev
        {
            release()
            return nil
        }
    }

    deinit { release() }

    /// The descriptor holding the lock (-1 once released), for tests that share its open file.
    var fileDescriptor: Int32 { descriptor.load(ordering: .acquiring) }

    /// Gives the lock up (closes the descriptor exactly once, whoever calls). Unlocks explicitly
    /// first: an `flock` belongs to the open file, which a child process this one is spawning at that
    /// instant shares until its exec closes the descriptor, so a close alone could leave the lock held
    /// for a moment after its owner let go (another worker's claim or rescue would then skip the job).
    func release() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        if fd >= 0 {
            flock(fd, LOCK_UN)
            close(fd)
        }
    }
}
