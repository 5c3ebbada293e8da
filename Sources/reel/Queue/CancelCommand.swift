import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct CancelCommand: JobIDCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel jobs: a waiting job never starts; a running one stops and leaves no output.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "Job ids.")
    var ids: [String]

    func apply(to id: String, in store: any JobStore) async throws -> String? {
        switch try await store.cancel(id) {
        case .cancelled: JobState.cancelled.rawValue
        case .requested: "cancelling (its worker stops it)"
        case .alreadyEnded(let state): "already \(state.rawValue)"
        case .notFound: nil
        }
    }
}
