import Foundation
import ReelMedia
import Testing

@testable import ReelExport

/// The watchdog stops work whose heartbeat stands still, and only that.
@Suite("Watchdog")
struct WatchdogTests {
    @Test func silentWorkIsCancelledAsStalled() {
        let cancel = CancellationFlag()
        let watchdog = Watchdog(timeout: 0.2, cancel: cancel)
        let result = watchdog.run { _ throws(MediaError) in
            // Work that makes no progress but honours the cancel flag, as the pipeline does.
            while !cancel.isRaised { usleep(10_000) }
            throw MediaError(kind: .cancelled, call: "test", message: "stopped")
        }
        #expect(watchdog.stalled)
        #expect(cancel.isRaised)
        if case .failure(let error) = result { #expect(error.kind == .cancelled) } else { Issue.record("no failure") }
    }

    @Test func workThatKeepsBeatingIsLeftAlone() {
        let cancel = CancellationFlag()
        let watchdog = Watchdog(timeout: 0.3, cancel: cancel)
        let result = watchdog.run { heartbeat throws(MediaError) in
            for _ in 0..<20 {
                heartbeat.beatForTesting()
                usleep(50_000)
            }
        }
        #expect(!watchdog.stalled && !cancel.isRaised)
        if case .success = result {} else { Issue.record("expected success") }
    }

    @Test func workStuckInsideACodecIsAbandoned() {
        let cancel = CancellationFlag()
        let watchdog = Watchdog(timeout: 0.1, cancel: cancel, grace: 0.3)
        let result = watchdog.run { _ throws(MediaError) in sleep(3) }  // ignores the cancel flag
        #expect(result == nil)
        #expect(watchdog.stalled)
    }
}
