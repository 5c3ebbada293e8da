import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List jobs, oldest first.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: "Only jobs in this state: waiting, exporting, completed, failed, cancelled.")
    var state: String?

    @Flag(name: .long, help: "Print JSON, one job per line.")
    var json = false

    func validate() throws {
        if let state, JobState(rawValue: state) == nil {
            throw ValidationError("unknown state '\(state)'; use waiting, exporting, completed, failed or cancelled")
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        let store = try storeOptions.open(create: false)
        let statuses = try await store.list(state: state.flatMap(JobState.init(rawValue:)))
        JobPrinter.print(statuses, json: json, table: isatty(STDOUT_FILENO) == 1)
    }
}
