import ArgumentParser
import Foundation
import Logging
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem

#if Fleet
    import ReelFleet
#endif

/// Options every command shares: logging.
struct GlobalOptions: ParsableArguments {
    @Flag(name: .long, help: "Show FFmpeg's own log and Reel's debug log on stderr.")
    var verbose = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log level: trace, debug, info, notice, warning, error, critical (env REEL_LOG_LEVEL; default warning, info for work).",
            valueName: "level"),
        transform: GlobalOptions.named)
    var logLevel: Logger.Level?

    @Option(
        name: .long,
        help: ArgumentHelp("Log lines as text or json, on stderr (env REEL_LOG_FORMAT).", valueName: "format"),
        transform: GlobalOptions.named)
    var logFormat: ReelLogHandler.Format?

    /// The value of a type whose values are named by their raw strings (a log level, a format): parsed
    /// here rather than through an `ExpressibleByArgument` conformance the types' own modules lack.
    static func named<Value: RawRepresentable & CaseIterable>(_ text: String) throws -> Value
    where Value.RawValue == String {
        guard let value = Value(rawValue: text) else {
            throw ValidationError("'\(text)' is not one of \(Value.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    /// Sets up logging (quiet unless --verbose or --log-level): `--log-level`, else `$REEL_LOG_LEVEL`,
    /// else the command's default.
    func bootstrapLogging(defaultLevel: Logger.Level = .warning) {
        CLI.bootstrapLogging(verbose: verbose, level: logLevel, format: logFormat, defaultLevel: defaultLevel)
    }
}

/// Where presets come from, for the commands that use them (export, submit, work, presets).
struct PresetOptions: ParsableArguments {
    @Option(
        name: .customLong("presets-dir"),
        help: ArgumentHelp(
            "A folder of preset JSON files that add to or override the shipped presets (env REEL_PRESETS).",
            valueName: "dir"))
    var presetsDirectory: String?

    /// Sets up logging as `global` says (`logLevel` is the command's default level) and loads the
    /// presets.
    func prepare(_ global: GlobalOptions, logLevel: Logger.Level = .warning) throws -> PresetLibrary {
        global.bootstrapLogging(defaultLevel: logLevel)
        return try PresetLibrary(userFolder: presetsFolder.map { URL(fileURLWithPath: $0) })
    }

    /// `--presets-dir`, else `$REEL_PRESETS`.
    var presetsFolder: String? {
        presetsDirectory ?? ProcessInfo.processInfo.environment["REEL_PRESETS"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// What inputs may be: allowed folders and size limits.
struct InputOptions: ParsableArguments {
    @Option(
        name: .customLong("allow-root"),
        help: ArgumentHelp(
            "Only accept assets inside this folder, after resolving symlinks (repeatable; env REEL_ALLOWED_ROOTS, colon-separated).",
            valueName: "dir"))
    var allowedRoots: [String] = []

    @Option(name: .long, help: ArgumentHelp("Largest input file, in MB.", valueName: "MB"))
    var maxFileSize: Int?

    @Option(name: .long, help: ArgumentHelp("Longest input, in seconds.", valueName: "seconds"))
    var maxDuration: Double?

    @Option(name: .long, help: ArgumentHelp("Largest input width or height, in pixels.", valueName: "pixels"))
    var maxDimension: Int?

    @Option(name: .long, help: ArgumentHelp("Most streams an input may have.", valueName: "n"))
    var maxStreams: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Largest photo, in megapixels (width x height as its header declares, checked before decoding).",
            valueName: "MP"))
    var maxMegapixels: Int?

    var limits: InputLimits {
        var limits = Asset.defaultLimits
        limits.allowedRoots = allowedRoots + InputLimits.roots(fromEnvironment: ProcessInfo.processInfo.environment)
        if let maxFileSize { limits.maxFileBytes = Int64(maxFileSize) << 20 }
        if let maxDuration { limits.maxDurationSeconds = maxDuration }
        if let maxDimension { limits.maxDimension = maxDimension }
        if let maxStreams { limits.maxStreams = maxStreams }
        if let maxMegapixels { limits.maxPhotoPixels = maxMegapixels * 1_000_000 }
        return limits
    }

    func validate() throws {
        if let maxMegapixels, !(1...100_000).contains(maxMegapixels) {
            throw ValidationError("--max-megapixels must be between 1 and 100000, not \(maxMegapixels)")
        }
    }
}

/// Where the queue lives: the spool folder (one machine), or a PostgreSQL database (a fleet).
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The spool folder (env REEL_SPOOL; default $XDG_STATE_HOME/reel, else ~/.local/state/reel).",
            valueName: "dir"))
    var spool: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A fleet's queue in PostgreSQL instead of the spool: postgres://user@host:5432/database (env REEL_STORE).",
            valueName: "url"))
    var store: String?

    @Option(
        name: .customLong("status-dir"),
        help: ArgumentHelp(
            "With --store: the folder status files are written to, e.g. on shared storage (env REEL_STATUS_DIR).",
            valueName: "dir"))
    var statusDirectory: String?

    /// `--store`, else `$REEL_STORE`.
    var databaseURL: String? { store ?? Self.environmentDatabaseURL }

    /// `$REEL_STORE` when set: the queue's database for commands without `--store` (`reel library …`).
    static var environmentDatabaseURL: String? {
        ProcessInfo.processInfo.environment["REEL_STORE"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Opens the store. Only commands that add work (`submit`, `work`) create a missing spool; the
    /// others fail with an error naming it. A database store gets a pool of `connections`, run by the
    /// store itself until `close()`, or with `service` by the caller's `ServiceGroup` (`reel work`).
    func open(create: Bool, connections: Int = 2, lease: Duration? = nil, service: Bool = false) throws
        -> any JobStore
    {
        if let databaseURL {
            if spool != nil { throw CLIFailure(message: "use --spool or --store, not both", exitStatus: .usage) }
            #if Fleet
                return try openDatabase(databaseURL, connections: connections, lease: lease, service: service)
            #else
                throw LeftOut.fleet.failure
            #endif
        }
        let root =
            spool.map { URL(fileURLWithPath: $0) }
            ?? SpoolStore.defaultRoot(environment: ProcessInfo.processInfo.environment)
        return try SpoolStore(root: root, create: create)
    }

    /// Whether this store's worker is most likely the user submitting: a spool this user owns (or
    /// that does not exist yet, so this user creates it). A packaged spool (owned by `reel`) or a
    /// fleet's database is worked by someone else, maybe on another machine.
    var workedBySubmitter: Bool {
        if databaseURL != nil { return false }
        let root =
            spool.map { URL(fileURLWithPath: $0) }
            ?? SpoolStore.defaultRoot(environment: ProcessInfo.processInfo.environment)
        var status = stat()
        guard stat(root.path, &status) == 0 else { return true }
        return status.st_uid == geteuid()
    }

    func openDatabase(_ text: String, connections: Int = 2, lease: Duration? = nil, service: Bool = false) throws
        -> PostgresStore
    {
        let folder =
            statusDirectory ?? ProcessInfo.processInfo.environment["REEL_STATUS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        return try Self.openDatabase(
            text, statusFolder: folder, connections: connections, lease: lease, service: service)
    }

    /// A database store with a pool of `connections`, writing status files to `statusFolder` if any;
    /// run by the store itself until `close()`, or with `service` by the caller's `ServiceGroup`.
    static func openDatabase(
        _ text: String, statusFolder folder: String?, connections: Int = 2, lease: Duration? = nil,
        service: Bool = false
    ) throws -> PostgresStore {
        #if !Fleet
            throw LeftOut.fleet.failure
        #else
            let environment = ProcessInfo.processInfo.environment
            var options = PostgresStore.Options(statusFolder: folder, connections: connections)
            if let lease {
                options.lease = lease
                options.renew = min(.seconds(1), lease / 4)
            }
            // `REEL_FLEET_LISTEN=0`: poll only (measuring the fallback; poolers that cannot LISTEN).
            options.listen = environment["REEL_FLEET_LISTEN"] != "0"
            options.lifecycle = service ? .service : .standalone
            return try PostgresStore(url: try DatabaseURL(text, environment: environment), options: options)
        #endif
    }
}

/// The fleet's database alone, for the commands that use nothing else of a store (`reel db migrate`,
/// `reel db version`).
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The fleet's PostgreSQL database: postgres://user@host:5432/database (env REEL_STORE).", valueName: "url"))
    var store: String?

    /// `--store`, else `$REEL_STORE`.
    var databaseURL: String? {
        store ?? ProcessInfo.processInfo.environment["REEL_STORE"].flatMap { $0.isEmpty ? nil : $0 }
    }
}
