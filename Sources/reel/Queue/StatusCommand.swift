import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show jobs' status (all jobs when no id is given).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Job ids.")
    var ids: [String] = []

    @Flag(name: .long, help: "Print each status file's JSON, one per line.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let store = try storeOptions.open(create: false)
        var statuses: [JobStatus] = []
        if ids.isEmpty {
            statuses = try await store.list(state: nil)
        } else {
            for id in ids {
                guard let status = try await store.status(id) else {
                    throw CLIFailure(message: "no job \(id)", code: QueueError.Kind.notFound.code)
                }
                statuses.append(status)
            }
        }
        JobPrinter.print(statuses, json: json, table: false)
    }
}
