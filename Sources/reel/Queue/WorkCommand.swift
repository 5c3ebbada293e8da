import ArgumentParser
import Dispatch
import Foundation
import Logging
import ReelExport
import ReelQueue

#if Fleet
    import ReelFleet
#endif

struct WorkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract:
            "Run queued jobs until stopped (SIGINT/SIGTERM/SIGHUP: finish running jobs; a second signal hands them back)."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var presetOptions: PresetOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup(title: "Running as a service") var service: ServiceOptions
    @OptionGroup(title: "Remote assets (jobs that allow network access)") var network: NetworkPolicyOptions

    @Option(name: .long, help: "Jobs at once (default: one per core, at most 8).")
    var jobs: Int?

    @Flag(name: .long, help: "Exit 0 once nothing is waiting or running.")
    var drain = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --store: how long a job's lease lasts without renewal; a dead worker's job runs again about this long after it died (default 30).",
            valueName: "seconds"))
    var lease: Double?

    @Option(
        name: .long,
        help: ArgumentHelp("Fail a job as stalled after this many seconds without progress.", valueName: "seconds"))
    var stallTimeout: Double = 120

    @Flag(
        name: .long, inversion: .prefixedNo,
        help:
            "Run each export in a child process (the default), so a crash inside a codec fails only that job; --no-isolate runs exports in this process (about 50-80 ms less per job)."
    )
    var isolate = true

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Delete jobs that ended longer ago than this (e.g. 7d, 12h, 30m), checked every minute.",
            valueName: "age"))
    var keepFinished: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How often to look for jobs whose worker died (their next attempt starts within this time).",
            valueName: "seconds"))
    var rescueInterval: Double = 2

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Source metadata written for jobs that did not choose: keep, sharing (no location, device or identifier keys) or strip. Default: $REEL_METADATA, else keep.",
            valueName: "policy"))
    var metadata: String?

    func validate() throws {
        if let metadata {
            do {
                _ = try MetadataPolicy.parse(metadata)
            } catch {
                throw ValidationError(error.message)
            }
        }
        if !(0.1...3600).contains(rescueInterval) {
            throw ValidationError("--rescue-interval must be between 0.1 and 3600 seconds")
        }
        if let keepFinished, Age.seconds(keepFinished) == nil {
            throw ValidationError("cannot read the age '\(keepFinished)'; write e.g. 7d, 12h, 30m or 90s")
        }
        if let lease, !(2...3600).contains(lease) { throw ValidationError("--lease must be 2 to 3600 seconds") }
        if lease != nil && storeOptions.databaseURL == nil {
            throw ValidationError("--lease applies to a database store (--store)")
        }
    }

    func run() async throws {
        let presets = try presetOptions.prepare(global, logLevel: .info)
        let metadataDefault = try metadata.map { try MetadataPolicy.parse($0) } ?? MetadataDefault.fromEnvironment()
        let workers = jobs ?? WorkerPool.defaultJobs
        // A connection per running job's renewals, plus claims and rescues. A database store runs as
        // a service of the worker's group, which closes it last (WorkService.swift).
        let store = try storeOptions.open(
            create: true, connections: workers + 2, lease: lease.map { .seconds($0) }, service: true)
        var configuration = WorkerPool.Configuration(
            jobs: workers, drain: drain, presets: presets, limits: input.limits, recoveryInterval: rescueInterval,
            stallTimeout: stallTimeout, isolation: isolate ? try isolation() : nil,
            keepFinished: keepFinished.flatMap(Age.seconds))
        configuration.metadataDefault = metadataDefault ?? .keep
        #if Fleet
            let fleetStore = store as? PostgresStore
        #else
            let fleetStore: PostgresStore? = nil
        #endif
        // With the queue in PostgreSQL, the library is there too (unless --library names another), on
        // the worker's own pool: every worker of the fleet resolves identifiers and saves back alike.
        let link = library.link(limits: input.limits, queueDatabase: storeOptions.databaseURL, sharing: fleetStore)
        configuration.library = link
        #if Photos
            configuration.photoCache = WorkerPhotoCache(library: link)
        #endif
        #if Remote
            // Jobs that allow network access download under this worker's policy, never a wider one.
            configuration.remote = WorkerRemoteFetcher(fetcher: try network.fetcher())
        #endif
        // The pool runs in a ServiceGroup, with the metrics/health/status server when asked for
        // (WorkService.swift); SIGINT/SIGTERM/SIGHUP drain it, a second signal hands running jobs back.
        let runtime = ServiceOptions.Runtime(options: service, presets: presets)
        configuration.onEvent = runtime.observe
        try await runtime.run(
            WorkerPool(store: store, configuration: configuration), store: store, storeService: fleetStore,
            slots: workers)
    }

    /// This executable, to run `reel _run-job` for each export.
    func isolation() throws -> Isolation {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            throw CLIFailure(message: "cannot find this executable to run isolated exports")
        }
        var environment: [String: String] = [:]
        // The library a cache job's process reads: the worker's.
        switch library.location(queueDatabase: storeOptions.databaseURL) {
        case .file(let path): environment["REEL_LIBRARY"] = path
        case .database(let url): environment["REEL_LIBRARY"] = url
        }
        if let settings = CLI.currentLogSettings {
            // The child logs like the worker; without --verbose it stays at warning (its per-job info
            // would only repeat the worker's).
            environment["REEL_LOG_LEVEL"] =
                global.verbose ? settings.level.rawValue : max(settings.level, .warning).rawValue
            environment["REEL_LOG_FORMAT"] = settings.format.rawValue
        }
        return Isolation(
            executable: executable, presetsFolder: presetOptions.presetsFolder, verbose: global.verbose,
            environment: environment)
    }
}
