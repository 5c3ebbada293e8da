import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Delete finished jobs (status files, keys) that ended longer ago than an age.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Only jobs that ended longer ago than this (7d, 12h, 30m, 90s).", valueName: "age"))
    var olderThan: String

    @Option(
        name: .long, help: "Only jobs in this state (completed, failed or cancelled; repeatable). Default: all three.")
    var state: [String] = []

    func validate() throws {
        if Age.seconds(olderThan) == nil {
            throw ValidationError("cannot read the age '\(olderThan)'; write e.g. 7d, 12h, 30m or 90s")
        }
        for name in state where ![JobState.completed, .failed, .cancelled].contains(JobState(rawValue: name)) {
            throw ValidationError("cannot prune '\(name)' jobs; use completed, failed or cancelled")
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        let store = try storeOptions.open(create: false)
        let states =
            state.isEmpty ? [.completed, .failed, .cancelled] : Set(state.compactMap(JobState.init(rawValue:)))
        let cutoff = Date(timeIntervalSinceNow: -(Age.seconds(olderThan) ?? 0))
        let count = try await store.prune(finishedBefore: cutoff, states: states)
        CLI.printLine("pruned \(count) job\(count == 1 ? "" : "s")")
    }
}

/// Ages such as `7d`, `12h`, `30m`, `90s` or plain seconds.
enum Age {
    static func seconds(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604_800]
        var number = text.trimmingCharacters(in: .whitespaces)
        var unit = 1.0
        if let last = number.last, let factor = units[last] {
            unit = factor
            number.removeLast()
        }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return value * unit
    }
}
