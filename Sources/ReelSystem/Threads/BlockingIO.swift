import Foundation
import Synchronization

/// Eight long-lived threads for blocking file work: the spool's open, write, fsync, rename, flock and
/// readdir, and the workers' publish receipts. Shaped like NIO's `NIOThreadPool.runIfActive`: `run`
/// hands a closure to one of the threads and suspends the calling task until it returns.
///
/// Swift's cooperative pool has one thread per core (two here), and those threads also run every
/// worker's heartbeats, its publish gate and the ops server's handlers. An fsync while exports stream
/// gigabytes to the same disk can block for seconds; on the cooperative pool it would stall all of
/// them. Here it stalls one I/O thread, and the others go on with the rest of the spool's work: eight,
/// so that the claims and finishes of a full worker (each fsyncs twice) leave threads for the
/// renewals. Measured with every fsync made 2.5 s slower and eight jobs (BusyDiskTests): `/readyz`
/// answered within 0.03 s at worst, against 2.5 s with the file work on the cooperative pool.
package final class BlockingIO: Sendable {
    /// The threads every spool and worker of this process share.
    package static let shared = BlockingIO(threads: 8, name: "reel-io")

    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let pending = DispatchSemaphore(value: 0)

    /// Starts `threads` threads that live as long as the process.
    init(threads: Int, name: String) {
        for index in 0..<max(1, threads) {
            startThread(named: "\(name)-\(index)") { [self] in
                while true {
                    pending.wait()
                    let work = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                    work?()
                }
            }
        }
    }

    /// Runs `body` on one of the threads and returns its result; the calling task waits without
    /// holding a thread.
    package func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            queue.withLock {
                $0.append {
                    do throws(E) {
                        continuation.resume(returning: .success(try body()))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                }
            }
            pending.signal()
        }
        return try result.get()
    }
}
