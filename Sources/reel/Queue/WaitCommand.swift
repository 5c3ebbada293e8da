import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait", abstract: "Wait until jobs end; exit 0 only if every one completed.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    @Option(name: .long, help: "Give up after this many seconds (exit 2).")
    var timeout: Double?

    @Flag(name: .long, help: "Print the final statuses as JSON lines.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let store = try storeOptions.open(create: false)
        let deadline = timeout.map { ContinuousClock.now + .seconds($0) }
        while true {
            var statuses: [JobStatus] = []
            for id in ids {
                guard let status = try await store.status(id) else {
                    throw CLIFailure(message: "no job \(id)", code: QueueError.Kind.notFound.code)
                }
                statuses.append(status)
            }
            if statuses.allSatisfy({ $0.state.isTerminal }) {
                JobPrinter.print(statuses, json: json, table: false)
                if statuses.allSatisfy({ $0.state == .completed }) { return }
                throw CLIFailure(message: "not every job completed", exitStatus: .failure)
            }
            if let deadline, ContinuousClock.now >= deadline {
                JobPrinter.print(statuses, json: json, table: false)
                let open = statuses.filter { !$0.state.isTerminal }.map(\.id)
                throw CLIFailure(
                    message: "timed out waiting for \(open.joined(separator: ", "))", exitStatus: .timedOut)
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}
