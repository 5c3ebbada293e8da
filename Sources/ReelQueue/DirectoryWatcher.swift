import Foundation

/// Wakes a waiting worker when a file appears in a folder (inotify), so new jobs start at once while
/// an idle worker uses no CPU. Falls back to plain sleeping where inotify is unavailable.
final class DirectoryWatcher: Sendable {
    private let fd: Int32

    init(path: String) {
        let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        if fd >= 0, inotify_add_watch(fd, path, UInt32(IN_CREATE | IN_MOVED_TO)) < 0 {
            close(fd)
            self.fd = -1
        } else {
            self.fd = fd
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Returns when something was created in the folder or after `seconds`.
    func wait(seconds: TimeInterval) {
        let milliseconds = Int32(max(0, min(seconds, 3600)) * 1000)
        guard fd >= 0 else {
            usleep(UInt32(milliseconds) * 1000)
            return
        }
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, milliseconds) > 0 {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(fd, &buffer, buffer.count) > 0 {}
        }
    }
}
