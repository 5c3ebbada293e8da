import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

/// `cancel` and `retry`: one change per job id, a line each, an error naming the ids not found.
protocol JobIDCommand: AsyncParsableCommand {
    var global: GlobalOptions { get }
    var storeOptions: StoreOptions { get }
    var ids: [String] { get }
    /// Does the change; returns the line to print, or nil when there is no such job.
    func apply(to id: String, in store: any JobStore) async throws -> String?
}

extension JobIDCommand {
    func run() async throws {
        global.bootstrapLogging()
        let store = try storeOptions.open(create: false)
        var missing: [String] = []
        for id in ids {
            if let line = try await apply(to: id, in: store) {
                CLI.printLine("\(id)  \(line)")
            } else {
                missing.append(id)
            }
        }
        if !missing.isEmpty {
            throw CLIFailure(message: "no job \(missing.joined(separator: ", "))", code: QueueError.Kind.notFound.code)
        }
    }
}
