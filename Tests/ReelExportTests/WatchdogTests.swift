import Dispatch
import ReelSystem
import TestSupport
import Testing

@testable import ReelExport
@testable import ReelMedia

/// The watchdog stops work whose heartbeat stands still, and only that. No test depends on how
/// fast the machine is: the work waits for conditions (the flag raised, the watchdog's looks, a
/// release), each with a limit, and the watchdog looks every 10 ms.
@Suite("Watchdog", .timeLimit(.minutes(10)))
struct WatchdogTests {
    @Test func silentWorkIsCancelledAsStalled() async throws {
        let cancel = CancellationFlag()
        let watchdog = Watchdog(timeout: 0.2, cancel: cancel, tick: 0.01)
        let result = try await onOwnThread {
            watchdog.run { _ throws(MediaError) in
                // Work that makes no progress but honours the cancel flag, as the pipeline does.
                _ = waitBlocking { cancel.isRaised }
                throw MediaError(kind: .cancelled, call: "test", message: "stopped")
            }
        }
        #expect(watchdog.stalled)
        #expect(cancel.isRaised)
        if case .failure(let error) = result { #expect(error.kind == .cancelled) } else { Issue.record("no failure") }
    }

    @Test func workThatKeepsBeatingIsLeftAlone() async throws {
        let cancel = CancellationFlag()
        // A generous timeout: the work beats about every millisecond, so only a machine that stops
        // this thread for 5 s could make it look stalled.
        let watchdog = Watchdog(timeout: 5, cancel: cancel, tick: 0.01)
        let result = try await onOwnThread {
            watchdog.run { heartbeat throws(MediaError) in
                // Beats until the watchdog has looked 20 times: it had every chance to intervene.
                let looked = waitBlocking {
                    heartbeat.beat()
                    return watchdog.checks >= 20
                }
                if !looked {
                    throw MediaError(kind: .internalFailure, call: "test", message: "the watchdog never looked")
                }
            }
        }
        #expect(!watchdog.stalled && !cancel.isRaised)
        if case .success = result {} else { Issue.record("expected success, got \(String(describing: result))") }
    }

    @Test func workStuckInsideACodecIsAbandoned() async throws {
        let cancel = CancellationFlag()
        let release = DispatchSemaphore(value: 0)
        let watchdog = Watchdog(timeout: 0.1, cancel: cancel, grace: 0.3, tick: 0.01)
        // Ignores the cancel flag, like a codec stuck in a call, until the test lets it go.
        let result = try await onOwnThread {
            watchdog.run { _ throws(MediaError) in _ = release.wait(timeout: .now() + 60) }
        }
        release.signal()
        #expect(result == nil)
        #expect(watchdog.stalled)
    }
}
