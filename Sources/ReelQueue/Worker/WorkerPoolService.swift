import ServiceLifecycle

/// A ``WorkerPool`` as a swift-service-lifecycle `Service`, to run in a `ServiceGroup` beside other
/// services (an HTTP server, a queue monitor).
///
/// - Graceful shutdown (the group's first SIGTERM, or `triggerGracefulShutdown()`) is the pool's
///   drain: no new claims; running jobs finish.
/// - Cancellation (a cancellation signal, or the group's `maximumGracefulShutdownDuration` running
///   out) stops running jobs and hands them back to the queue, their attempt not counted.
/// - `run()` returns once every job has finished or been handed back. With
///   ``WorkerPool/Configuration/drain`` it also returns when the queue is empty; give the service
///   `successTerminationBehavior: .gracefullyShutdownGroup` so the group ends with it.
///
/// ```swift
/// let pool = WorkerPool(store: store, configuration: .init(jobs: 2))
/// let group = ServiceGroup(
///     configuration: .init(
///         services: [.init(service: WorkerPoolService(pool), successTerminationBehavior: .gracefullyShutdownGroup)],
///         gracefulShutdownSignals: [.sigterm], logger: logger))
/// try await group.run()
/// ```
public struct WorkerPoolService: Service {
    /// The pool it runs.
    public let pool: WorkerPool

    /// Wraps `pool`; run it once.
    public init(_ pool: WorkerPool) {
        self.pool = pool
    }

    /// Runs the pool until it stops (see the type's description for how it stops).
    public func run() async throws {
        // The pool runs in a task of its own: cancelling this service must not cancel the jobs' tasks
        // directly (an export cancelled that way would end as `cancelled`); the pool stops them itself
        // and hands them back.
        let pool = pool
        let running = Task { await pool.run() }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await running.value
            } onGracefulShutdown: {
                pool.stop()
            }
        } onCancel: {
            pool.stop(cancelRunning: true)
        }
    }
}
