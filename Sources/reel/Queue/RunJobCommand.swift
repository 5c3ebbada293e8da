import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

/// The export process of `reel work --isolate`: reads a `ChildRequest` on stdin, writes `ExportEvent`
/// lines on stdout. Not for people: the worker starts it.
struct RunJobCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "_run-job", abstract: "Run one queued export for a worker (internal).", shouldDisplay: false)

    func run() async throws {
        // The worker passes its log settings in REEL_LOG_LEVEL / REEL_LOG_FORMAT.
        CLI.bootstrapLogging(verbose: false)
        // A cache job reads the worker's library, which the worker names in REEL_LIBRARY.
        #if Photos
            let runner = ChildRunner(
                photoCache: WorkerPhotoCache(library: try LibraryOptions.parse([]).link(limits: Asset.defaultLimits)))
        #else
            let runner = ChildRunner()
        #endif
        // A stop signal (from the worker, or anyone) stops the export; the worker decides what it means.
        let sources = CLI.onTerminationSignals { runner.interrupt() }
        defer { sources.forEach { $0.cancel() } }
        let status = await runner.runFromStandardInput { CLI.printLine($0) }
        if status != 0 { throw ExitCode(status) }
    }
}
