import Foundation
import Testing

@testable import ReelQueue

/// One rule for both stores: a running job's status file is written with progress at most every
/// 0.25 s (its first progress at once), and without news at least every 5 s (less one renewal, so
/// renewals on time keep the promise).
@Suite("Status file schedule", .timeLimit(.minutes(1)))
struct StatusFileScheduleTests {
    @Test func progressAtMostEveryQuarterSecondAndAHeartbeatWithinFiveSeconds() {
        let schedule = StatusFileSchedule(renewInterval: .seconds(1))
        let claimed = ContinuousClock.now
        schedule.wrote("a", now: claimed)
        // Progress: the first at once (the claim wrote none), then not twice within 0.25 s.
        #expect(schedule.isDue("a", hasProgress: true, now: claimed + .milliseconds(10)))
        #expect(!schedule.isDue("a", hasProgress: true, now: claimed + .milliseconds(100)))
        #expect(schedule.isDue("a", hasProgress: true, now: claimed + .milliseconds(260)))
        #expect(!schedule.isDue("a", hasProgress: true, now: claimed + .milliseconds(400)))
        // Without progress: only once 5 s less one renewal have passed since the last write.
        let last = claimed + .milliseconds(260)
        #expect(!schedule.isDue("a", hasProgress: false, now: last + .milliseconds(3_999)))
        #expect(schedule.isDue("a", hasProgress: false, now: last + .seconds(4)))
        #expect(!schedule.isDue("a", hasProgress: false, now: last + .seconds(5)))
        // Each lease on its own; a forgotten one starts afresh.
        #expect(schedule.isDue("b", hasProgress: false, now: claimed))
        schedule.forget("a")
        #expect(schedule.isDue("a", hasProgress: false, now: last + .seconds(4) + .milliseconds(1)))
    }

    /// A store that stamps heartbeats itself (PostgreSQL's `now()`): the quiet interval runs between
    /// stamps, not between answers. The claim's answer comes 1.5 s late and the next renewals' at
    /// once: measured on arrival, the file would skip the renewal stamped 4.1 s after it and fall
    /// 5.3 s behind by the next; measured between stamps it is rewritten at 4.1 s.
    @Test func aLateAnswerIsMeasuredFromTheStoresStamp() {
        let schedule = StatusFileSchedule(renewInterval: .seconds(1))
        let start = ContinuousClock.now
        let stamped = Date(timeIntervalSince1970: 1_800_000_000)
        schedule.wrote("a", heartbeat: stamped, now: start + .milliseconds(1_500))
        #expect(!schedule.isDue("a", hasProgress: false, heartbeat: stamped + 3.9, now: start + .milliseconds(3_950)))
        #expect(schedule.isDue("a", hasProgress: false, heartbeat: stamped + 4.1, now: start + .milliseconds(4_150)))
        // The stamp written is the new reference: 3.9 s later is not yet due, 4.1 s is.
        #expect(!schedule.isDue("a", hasProgress: false, heartbeat: stamped + 8.0, now: start + .seconds(8)))
        #expect(schedule.isDue("a", hasProgress: false, heartbeat: stamped + 8.2, now: start + .milliseconds(8_200)))
        // Progress writes carry their stamp too.
        #expect(schedule.isDue("a", hasProgress: true, heartbeat: stamped + 9, now: start + .seconds(9)))
        #expect(!schedule.isDue("a", hasProgress: false, heartbeat: stamped + 12.9, now: start + .seconds(13)))
        #expect(schedule.isDue("a", hasProgress: false, heartbeat: stamped + 13, now: start + .seconds(13)))
    }
}
