import Foundation
import ReelMedia
import Testing

@testable import ReelQueue

@Suite("Core budget", .timeLimit(.minutes(2)))
struct CoreBudgetTests {
    @Test func aBacklogGetsOneCoreEachAndALoneVideoJobGetsThemAll() {
        let budget = CoreBudget(cores: 2, slots: 2)
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
        // A video job with nothing behind it takes the whole machine: two threads per codec, a number
        // of the budget's, never the codecs' own count of the machine's cores.
        let units = budget.take(allFree: true)
        #expect(units == 2 && budget.threads(holding: units) == 2)
        #expect(!budget.hasRoom)
        budget.release(units)
        #expect(budget.free == 2 && budget.hasRoom)
    }

    @Test func slotsLimitJobsEvenWithFreeCores() {
        // `reel work --jobs 1` on two cores: one job at a time, which holds both cores even with a
        // backlog waiting (no other job could use the second).
        let budget = CoreBudget(cores: 2, slots: 1)
        let first = budget.take(allFree: false)
        #expect(first == 2 && budget.threads(holding: first) == 2)
        #expect(budget.free == 0 && !budget.hasRoom)
        #expect(budget.take(allFree: false) == 0)
        budget.release(first)
        #expect(budget.take(allFree: true) == 2)
        // `--jobs 3` on 4 cores with a backlog: one core each for the first two, the other two for
        // the job in the last slot.
        let three = CoreBudget(cores: 4, slots: 3)
        let taken: [Int] = [three.take(allFree: false), three.take(allFree: false), three.take(allFree: false)]
        #expect(taken == [1, 1, 2])
    }

    @Test func aWaitingDispatcherIsWokenWhenAJobEnds() async {
        let budget = CoreBudget(cores: 1, slots: 1)
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

    @Test func moreJobsThanCoresNeverGiveAJobMoreThreadsThanCores() {
        // `reel work --jobs 4` on two cores: four units, one per job; a lone job holding all four
        // still gets two threads, the cores it can use.
        let budget = CoreBudget(cores: 2, slots: 4)
        let all = budget.take(allFree: true)
        #expect(all == 4 && budget.threads(holding: all) == 2)
        budget.release(all)
        // Beside two one-unit jobs, a job holding the other two units holds one core's worth.
        #expect(budget.take(allFree: false) == 1 && budget.take(allFree: false) == 1)
        let half = budget.take(allFree: true)
        #expect(half == 2 && budget.threads(holding: half) == 1)
    }

    @Test(arguments: [(1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (8, 3), (2, 4)])
    func runningJobsNeverHoldMoreThreadsThanCores(cores: Int, jobs: Int) {
        // Whatever order jobs start and end in, the codec threads of the jobs running at once add
        // up to at most the cores (or one per job, when the user asked for more jobs than cores).
        let budget = CoreBudget(cores: cores, slots: jobs)
        var held: [Int] = []
        for step in 0..<50 {
            if step % 3 == 2, !held.isEmpty {
                budget.release(held.removeFirst())
            } else {
                let units = budget.take(allFree: step % 2 == 0)
                if units > 0 { held.append(units) }
            }
            let threads = held.map { budget.threads(holding: $0) }
            #expect(threads.allSatisfy { $0 >= 1 && $0 <= cores })
            #expect(threads.reduce(0, +) <= max(cores, held.count), "\(threads) on \(cores) cores")
            #expect(held.count <= jobs)
        }
    }
}
