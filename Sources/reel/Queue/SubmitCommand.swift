import ArgumentParser
import Foundation
import ReelExport
import ReelQueue

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit", abstract: "Queue export jobs; `reel work` runs them.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var presetOptions: PresetOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions

    @Argument(
        help:
            "Media files to export (one job each), library:<localIdentifier> for assets of the library, or https URLs (with --network-access: the worker downloads them)."
    )
    var assets: [String] = []

    @Flag(
        name: .long,
        help:
            "Allow the worker to download assets named by URL (under its own network policy); without it a URL is refused with network-access-required."
    )
    var networkAccess = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "For one asset named by URL: the SHA-256 its bytes must have, checked by the worker before decoding.",
            valueName: "hex"))
    var sha256: String?

    @OptionGroup(title: ExportOptions.title) var options: ExportOptions

    @Option(
        name: .long, help: "Folder for outputs named <asset>.<preset>.<job id>.<type> (default: the current folder).")
    var outputDir: String?

    // Taken as it comes, so a negative priority needs no '=' (`--priority -3`).
    @Option(name: .long, parsing: .unconditional, help: "Higher runs first; equal priorities run in submission order.")
    var priority: Int = 0

    @Option(name: .long, help: "Idempotency key: submitting it again returns the existing job (one asset only).")
    var key: String?

    @Option(name: .long, help: "Attempts before a job fails for good (1 to 20).")
    var maxAttempts: Int = JobSpec.defaultAttempts

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Submit the jobs of a JSON-lines file, one job per line ('-' reads stdin), each line's keys the options above in camelCase. The whole batch is rejected if any line is invalid.",
            valueName: "file"))
    var manifest: String?

    @Flag(
        name: .long,
        help:
            "Print one JSON object per job: its id, status file, state and output, or why it was refused (error: code, message, retryable)."
    )
    var json = false

    func validate() throws {
        if assets.isEmpty && manifest == nil { throw ValidationError("name at least one asset, or --manifest") }
        // A ladder's rungs have a default preset, as with `reel export --type hls` (or `--ladder`,
        // which implies it).
        if !assets.isEmpty && options.preset == nil && options.type?.lowercased() != "hls" && options.ladder == nil {
            throw ValidationError("--preset is required")
        }
        if options.output != nil && outputDir != nil { throw ValidationError("use -o or --output-dir, not both") }
        if options.output != nil && assets.count > 1 {
            throw ValidationError("-o names one file; use --output-dir for several assets")
        }
        if sha256 != nil && assets.count != 1 { throw ValidationError("--sha256 checks one asset") }
        if key != nil && assets.count > 1 {
            throw ValidationError("--key identifies one job; submit one asset per key")
        }
    }

    func run() async throws {
        let presets = try presetOptions.prepare(global)
        let limits = input.limits
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        let metadataDefault = try MetadataDefault.fromEnvironment()
        // Every job is checked (as `reel export` would before any work) before any is queued: one
        // refusal queues nothing, and each refusal is reported.
        var specs: [JobSpec] = []
        var refusals: [(asset: String?, line: Int?, error: ExportError)] = []
        var manifestProblems: [(line: Int, error: ExportError)] = []
        let link = library.link(limits: limits, queueDatabase: storeOptions.databaseURL)
        // Library assets resolve below: a library this build leaves out, or that cannot be opened,
        // ends the command with its own status (69) rather than as a refusal of each job.
        if assets.contains(where: { LibraryReference.identifier(in: $0) != nil }) { try link.openNow() }
        if let manifest {
            let lines = await Manifest.resolveLines(
                try read(manifest), presets: presets, limits: limits, workingDirectory: workingDirectory,
                metadataDefault: metadataDefault, library: link)
            if lines.isEmpty {
                try refuse([(nil, nil, ExportError(.invalidArgument, "the manifest has no jobs"))])
            }
            for line in lines {
                switch line.spec {
                case .success(let spec): specs.append(spec)
                case .failure(let error):
                    refusals.append((line.asset, line.line, error))
                    manifestProblems.append((line.line, error))
                }
            }
        }
        for asset in assets {
            var request = JobRequest(
                asset: asset, export: options.request, outputDir: outputDir, priority: priority, key: key,
                maxAttempts: maxAttempts)
            if RemoteURL.isRemote(asset) {
                request.networkAccessAllowed = networkAccess
                request.sha256 = sha256
            }
            do throws(ExportError) {
                try await request.resolveLibraryAsset(in: link)
                specs.append(
                    try request.resolve(
                        presets: presets, limits: limits, workingDirectory: workingDirectory,
                        metadataDefault: metadataDefault))
            } catch {
                refusals.append((RemoteURL.shown(asset), nil, error))
            }
        }
        // Where the worker will write: refused now when the worker is this user and cannot, else a
        // warning with the job (this user cannot know what the worker's user may write).
        var warnings: [String: String] = [:]
        let workedBySubmitter = storeOptions.workedBySubmitter
        for spec in specs {
            do throws(ExportError) {
                warnings[spec.output] = try OutputAccess.check(spec, workedBySubmitter: workedBySubmitter)
            } catch {
                refusals.append((spec.requestedAsset, nil, error))
            }
        }
        if !refusals.isEmpty {
            try refuse(refusals, summary: manifestProblems.isEmpty ? nil : Manifest.rejection(manifestProblems))
        }
        let store = try storeOptions.open(create: true)
        for spec in specs {
            try await SubmitReport.submit(
                spec, to: store, json: json, warnings: warnings[spec.output].map { [$0] } ?? [])
        }
    }

    /// Reports the refusals (with --json, one object each on stdout) and throws the error the command
    /// ends with: `summary` (a manifest's), else the first refusal's.
    private func refuse(_ refusals: [(asset: String?, line: Int?, error: ExportError)], summary: ExportError? = nil)
        throws -> Never
    {
        if json {
            for refusal in refusals {
                CLI.printLine(
                    CLI.jsonLine(SubmitReport(asset: refusal.asset, line: refusal.line, refusal: refusal.error)))
            }
            CLI.failurePrintedAsJSON.withLock { $0 = true }
        }
        throw summary ?? refusals[0].error
    }

    /// The manifest's bytes ('-' is stdin).
    private func read(_ source: String) throws -> Data {
        if source == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let contents = FileManager.default.contents(atPath: source) else {
            throw CLIFailure(message: "cannot read the manifest \(source)", exitStatus: .noInput)
        }
        return contents
    }
}

/// One line of `reel submit --json`: a queued job, or a refused one (a refusal names what was refused
/// and why in `error`, with the same code, message and retryable as `reel export --json`). Every key
/// is present in every line, `null` where it does not apply.
/// Whether the worker can write where a job writes, as far as the submitter can tell.
enum OutputAccess {
    /// Nil when this user may write the output's folder. Otherwise, when the worker is this user
    /// (`workedBySubmitter`), `output-failed` (the job would fail after its wait in the queue); else a
    /// warning for the job's report: the worker runs as another user, whose rights this user cannot see.
    static func check(_ spec: JobSpec, workedBySubmitter: Bool) throws(ExportError) -> String? {
        let folder = URL(fileURLWithPath: spec.output).deletingLastPathComponent().path
        // A missing folder is OutputPublisher's refusal, made in `resolve`.
        guard FileManager.default.fileExists(atPath: folder), access(folder, W_OK | X_OK) != 0 else { return nil }
        let user = getpwuid(geteuid()).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(geteuid())"
        if workedBySubmitter {
            throw ExportError(
                .outputFailed, "the output folder \(folder) is not writable by \(user), whose worker runs this queue",
                retryable: false)
        }
        return "the output folder \(folder) is not writable by \(user); the worker's user must be able to write it"
    }
}

struct SubmitReport: Encodable {
    /// The asset as resolved (a queued job) or as written (a refusal), when known.
    var asset: String?
    /// The manifest line, for a job from a manifest that was refused.
    var line: Int?
    var id: String?
    var statusFile: String?
    var state: String?
    var output: String?
    var created: Bool
    var error: ExportEvent.Failure.Reason?
    /// What the submitter could not check for the worker (an output folder it cannot write itself).
    var warnings: [String] = []

    init(asset: String, id: String, statusFile: String?, state: String, output: String, created: Bool) {
        self.asset = asset
        self.id = id
        self.statusFile = statusFile
        self.state = state
        self.output = output
        self.created = created
    }

    init(asset: String?, line: Int?, refusal: ExportError) {
        self.asset = asset
        self.line = line
        created = false
        error = ExportEvent.Failure(refusal).error
    }

    /// Queues `spec` in `store` and prints what `reel submit` prints of it: a JSON line with `json`,
    /// else the job's id, whether it was queued or already there, and its output.
    static func submit(_ spec: JobSpec, to store: any JobStore, json: Bool, warnings: [String] = []) async throws {
        var spec = spec
        spec.warnings = warnings
        let submission = try await store.submit(spec)
        let (status, created) = (submission.status, submission.created)
        if json {
            var report = SubmitReport(
                asset: spec.requestedAsset, id: status.id, statusFile: store.statusFile(for: status.id),
                state: status.state.rawValue, output: status.output, created: created)
            report.warnings = warnings
            CLI.printLine(CLI.jsonLine(report))
        } else {
            CLI.printLine("\(status.id)  \(created ? "queued" : "exists, \(status.state.rawValue)")  \(status.output)")
            for warning in warnings { CLI.printWarning("\(status.id): \(warning)") }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case asset, line, id, statusFile, state, output, created, error, warnings
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(asset, forKey: .asset)
        try c.encode(line, forKey: .line)
        try c.encode(id, forKey: .id)
        try c.encode(statusFile, forKey: .statusFile)
        try c.encode(state, forKey: .state)
        try c.encode(output, forKey: .output)
        try c.encode(created, forKey: .created)
        try c.encode(error, forKey: .error)
        try c.encode(warnings, forKey: .warnings)
    }
}
