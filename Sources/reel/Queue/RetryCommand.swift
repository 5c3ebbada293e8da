import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct RetryCommand: JobIDCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Queue failed or cancelled jobs again, with fresh attempts.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    func apply(to id: String, in store: any JobStore) async throws -> String? {
        do {
            return "\(try await store.retry(id).state.rawValue)"
        } catch let error as QueueError where error.kind == .notFound {
            return nil
        }
    }
}
