import Foundation

/// Runs `body` on a thread of its own, for a blocking wait that may last (a child's end, its pipes,
/// inotify). Dispatch's shared threads are as many as the cores and Swift's tasks run on them too:
/// an isolated job's three waits there left no thread for its publish gate's check until Dispatch
/// added one, about once a second (1.6 s a job). The worker's runners and the tests' tools use it.
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
}
