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

/// Prints statuses as JSON lines, a table, or plain lines.
enum JobPrinter {
    static func print(_ statuses: [JobStatus], json: Bool, table: Bool) {
        if json {
            for status in statuses { CLI.printLine(CLI.jsonLine(status)) }
            return
        }
        if table {
            CLI.printLine("ID                  STATE      PROGRESS  TRIES  PRESET              OUTPUT / ERROR")
        }
        for status in statuses {
            let progress = String(format: "%5.1f%%", status.progress * 100)
            var detail = status.error.map { "\($0.code): \($0.message)" } ?? status.output
            // An exporting job whose worker is gone says so until a live worker picks it up.
            let state = status.orphaned == true ? "orphaned" : status.state.rawValue
            if status.orphaned == true { detail = "its worker is gone; a running worker picks it up within 2 s" }
            let preset = status.preset.padding(toLength: 18, withPad: " ", startingAt: 0)
            let id = status.id.padding(toLength: 18, withPad: " ", startingAt: 0)
            let tries = "\(status.attempts)/\(status.maxAttempts)"
            CLI.printLine(
                "\(id)  \(state.padding(toLength: 9, withPad: " ", startingAt: 0))  \(progress)    \(tries)    \(preset)  \(detail)"
            )
            // What submit warned of stays with the job (`reel status ID`; a listing keeps one line a job).
            if !table, status.state != .completed {
                for warning in status.spec?.warnings ?? [] { CLI.printLine("    warning: \(warning)") }
            }
        }
    }
}
