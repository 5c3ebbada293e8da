import Foundation

// Every thread Reel starts, starts here: blocking work that may last (an export's pipeline, a probe,
// a child process's end and its pipes, inotify, the spool's file work) runs on threads of its own.
// Dispatch's shared threads are as many as the cores and Swift's tasks run on them too: an isolated
// job's three waits there left no thread for its publish gate's check until Dispatch added one, about
// once a second (1.6 s a job).

/// Runs `body` on a new thread named `name` (as Foundation shows it; `nameThisThread` names it for
/// the kernel too), with `stackSize` bytes of stack (the system's default when nil).
package func startThread(named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    if let stackSize { thread.stackSize = stackSize }
    thread.start()
}

/// Runs `body` on a thread of its own and waits for what it returns or throws without holding a
/// thread of Swift's cooperative pool: how async code calls blocking work.
package func onOwnThread<T: Sendable, E: Error>(
    named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () throws(E) -> T
) async throws(E) -> T {
    let outcome: Result<T, E> = await withCheckedContinuation { continuation in
        startThread(named: name, stackSize: stackSize) {
            do throws(E) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
    }
    return try outcome.get()
}

/// Names the calling thread for the kernel: what `top -H`, gdb and `/proc` show, and what the threads
/// it starts inherit. Foundation's `Thread.name` does not reach the kernel on Linux, and
/// `pthread_setname_np` is not visible to Swift; a thread may rename itself through `/proc`.
package func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
