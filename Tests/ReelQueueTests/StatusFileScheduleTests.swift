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
}
