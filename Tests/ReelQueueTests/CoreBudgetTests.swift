import Foundation
import Testing

@testable import ReelQueue

@Suite("Core budget", .timeLimit(.minutes(2)))
struct CoreBudgetTests {
    @Test func aBacklogGetsOneCoreEachAndALoneVideoJobGetsThemAll() {
        let budget = CoreBudget(total: 2, slots: 2)
        // Two jobs started while others wait: one unit each, single-threaded codecs.
        let first = budget.take(allFree: false)
        let second = budget.take(allFree: false)
        #expect(first == 1 && second == 1)
        #expect(budget.threads(holding: first) == 1)
        // Every unit is held: there is no room, and nothing more is taken.
        #expect(!budget.hasRoom)
        #expect(budget.take(allFree: true) == 0)
        budget.release(first)
        budget.release(second)
        // A video job with nothing behind it takes the whole machine: the codecs choose their threads.
        let units = budget.take(allFree: true)
        #expect(units == 2 && budget.threads(holding: units) == 0)
        #expect(!budget.hasRoom)
        budget.release(units)
        #expect(budget.free == 2 && budget.hasRoom)
    }

    @Test func slotsLimitJobsEvenWithFreeCores() {
        // `reel work --jobs 1` on two cores: one job at a time, which may hold both cores.
        let budget = CoreBudget(total: 2, slots: 1)
        #expect(budget.take(allFree: false) == 1)
        #expect(budget.free == 1 && !budget.hasRoom)
        #expect(budget.take(allFree: false) == 0)
        budget.release(1)
        #expect(budget.take(allFree: true) == 2)
    }

    @Test func aWaitingDispatcherIsWokenWhenAJobEnds() async {
        let budget = CoreBudget(total: 1, slots: 1)
        let held = budget.take(allFree: true)
        let woken = Task {
            await budget.waitForRoom()
            return budget.take(allFree: false)
        }
        // It cannot get room until the unit comes back.
        #expect(!budget.hasRoom)
        budget.release(held)
        #expect(await woken.value == 1)
    }
}
