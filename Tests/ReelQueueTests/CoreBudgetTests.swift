import Foundation
import Testing

@testable import ReelQueue

@Suite("Core budget")
struct CoreBudgetTests {
    @Test func aBacklogGetsOneCoreEachAndALoneVideoJobGetsThemAll() {
        let budget = CoreBudget(total: 2)
        // Two jobs admitted while others wait: one unit each, single-threaded codecs.
        guard case .admitted(_, let first) = budget.admit(timeout: 0, claim: { "a" }, scales: { _ in false }),
            case .admitted(_, let second) = budget.admit(timeout: 0, claim: { "b" }, scales: { _ in false })
        else {
            Issue.record("two jobs were not admitted")
            return
        }
        #expect(first == 1 && second == 1)
        #expect(budget.threads(holding: first) == 1)
        // Every unit is held: a third worker neither claims nor waits past its timeout.
        var claimed = false
        guard
            case .busy = budget.admit(
                timeout: 0.05,
                claim: {
                    claimed = true
                    return "c"
                }, scales: { _ in true })
        else {
            Issue.record("a job was admitted with no free unit")
            return
        }
        #expect(!claimed)
        budget.release(first)
        budget.release(second)
        // A video job with nothing behind it takes the whole machine: the codecs choose their threads.
        guard case .admitted(_, let units) = budget.admit(timeout: 0, claim: { "d" }, scales: { _ in true }) else {
            Issue.record("the lone job was not admitted")
            return
        }
        #expect(units == 2 && budget.threads(holding: units) == 0)
        // An empty queue claims nothing and keeps no unit.
        budget.release(units)
        guard case .nothingToDo = budget.admit(timeout: 0, claim: { String?.none }, scales: { _ in true }) else {
            Issue.record("an empty claim was admitted")
            return
        }
        guard case .admitted(_, let again) = budget.admit(timeout: 0, claim: { "e" }, scales: { _ in true }) else {
            Issue.record("the unit of the empty claim was not given back")
            return
        }
        #expect(again == 2)
    }

    @Test func aWaitingWorkerIsAdmittedWhenAUnitIsReleased() {
        let budget = CoreBudget(total: 1)
        guard case .admitted(_, let held) = budget.admit(timeout: 0, claim: { 1 }, scales: { _ in true }) else {
            Issue.record("the first job was not admitted")
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) { budget.release(held) }
        guard case .admitted(let job, _) = budget.admit(timeout: 5, claim: { 2 }, scales: { _ in false }) else {
            Issue.record("the waiting worker was not admitted after the release")
            return
        }
        #expect(job == 2)
    }
}
