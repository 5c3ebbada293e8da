import Foundation

/// The sign that an export's temporary file still has a writer: an exclusive `flock` on the file,
/// taken the moment `OutputFile` creates it and held until the export has published or discarded it.
/// The kernel drops the lock when the process ends, however it ends (an FFmpeg assertion, SIGKILL, the
/// OOM killer), so a later run can tell a crashed export's leftover from a live export's file and
/// remove only the former (`removeIfAbandoned`).
///
/// Immutable: it owns one descriptor (a duplicate of the writer's, sharing its lock) and closes it
/// when the last reference goes, which releases the lock.
public final class OutputLock: Sendable {
    private let descriptor: Int32

    /// Takes over `descriptor` (already locked).
    package init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Locks a file this process has just created exclusively (`fd`). Returns false when another run
    /// removed it between its creation and the lock (it took the new, unlocked file for a leftover):
    /// the caller creates it again.
    package static func lockNewFile(_ fd: Int32) -> Bool {
        // A run removing leftovers holds a leftover's lock only while it unlinks it: wait for it.
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { return true }  // no locks on this file system: nothing to tell apart
        }
        var status = stat()
        return fstat(fd, &status) != 0 || status.st_nlink > 0
    }

    /// Locks a folder this process has just created (a ladder's temporary folder) for as long as the
    /// returned lock lives; nil when another run removed it between its creation and the lock (as
    /// `lockNewFile`): the caller creates it again.
    public static func lockNewFolder(_ path: String) -> OutputLock? {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard lockNewFile(fd) else {
            close(fd)
            return nil
        }
        return OutputLock(adopting: fd)
    }

    /// Removes the file at `path` (or a ladder's folder, with what it holds) if nobody holds its lock
    /// (its writer is gone); returns whether it did. One another process (or another export in this
    /// one) is writing is left alone.
    @discardableResult
    public static func removeIfAbandoned(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        // Unlink only the file locked: the name must still lead to it.
        var opened = stat()
        var named = stat()
        guard fstat(fd, &opened) == 0, lstat(path, &named) == 0, opened.st_dev == named.st_dev,
            opened.st_ino == named.st_ino
        else { return false }
        if opened.st_mode & S_IFMT == S_IFDIR {
            // Its writer waits for this lock (`lockNewFolder`) and then finds the folder gone.
            return (try? FileManager.default.removeItem(atPath: path)) != nil
        }
        return unlink(path) == 0
    }
}
