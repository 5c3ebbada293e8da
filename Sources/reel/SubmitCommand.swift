import ArgumentParser
import Foundation
import ReelExport
import ReelQueue

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit", abstract: "Queue export jobs; `reel work` runs them.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var input: InputOptions

    @Argument(help: "Media files to export (one job each).")
    var assets: [String] = []

    @Option(name: .long, help: "Preset name (see `reel presets`).")
    var preset: String?

    @Option(
        name: .long,
        help: "Output type: mp4, mov, m4v, m4a. Default: from -o's extension, else mp4 (m4a for audio presets).")
    var type: String?

    @Option(name: .shortAndLong, help: "Output file (one asset only).")
    var output: String?

    @Option(
        name: .long, help: "Folder for outputs named <asset>.<preset>.<job id>.<type> (default: the current folder).")
    var outputDir: String?

    @Option(name: .long, help: "Higher runs first; equal priorities run in submission order.")
    var priority: Int = 0

    @Option(name: .long, help: "Idempotency key: submitting it again returns the existing job (one asset only).")
    var key: String?

    @Option(name: .long, help: ArgumentHelp("Export only start-end (seconds or [hh:]mm:ss).", valueName: "start-end"))
    var timeRange: String?

    @Option(name: .long, help: "Source metadata to keep: keep, sharing, strip.")
    var metadata: String = "keep"

    @Option(name: .long, help: "Attempts before a job fails for good (1 to 20).")
    var maxAttempts: Int = JobSpec.defaultAttempts

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Submit the jobs of a JSON-lines file, one job per line ('-' reads stdin). The whole batch is rejected if any line is invalid.",
            valueName: "file"))
    var manifest: String?

    @Flag(name: .long, help: "Re-encode even when the source already satisfies the preset (no smart passthrough).")
    var forceTranscode = false

    @Flag(name: .long, help: "Replace the output file if it exists when the job runs.")
    var overwrite = false

    @Flag(name: .long, help: "Keep -o's extension even though it is not the --type's (needs --type).")
    var forceExtension = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Make each file fit this size (16MB, 8MiB, 500KB): the rate, and if need be the picture size, is chosen to fit; the whole duration is kept.",
            valueName: "size"))
    var maxSize: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Colour transparent pixels of an animated GIF or APNG become: #rrggbb, black (default) or white.",
            valueName: "colour"))
    var background: String?

    @Flag(name: .long, help: "Print one JSON object per job.")
    var json = false

    func validate() throws {
        if assets.isEmpty && manifest == nil { throw ValidationError("name at least one asset, or --manifest") }
        if !assets.isEmpty && preset == nil { throw ValidationError("--preset is required") }
        if output != nil && outputDir != nil { throw ValidationError("use -o or --output-dir, not both") }
        if output != nil && assets.count > 1 {
            throw ValidationError("-o names one file; use --output-dir for several assets")
        }
        if key != nil && assets.count > 1 {
            throw ValidationError("--key identifies one job; submit one asset per key")
        }
        if let maxSize, SizeLimit.parseBytes(maxSize) == nil {
            throw ValidationError("cannot read the size '\(maxSize)'; write e.g. 16MB, 8MiB or 500KB")
        }
        if let background, RGBColor(parsing: background) == nil {
            throw ValidationError(RGBColor.unreadable(background))
        }
        if forceExtension && type == nil {
            throw ValidationError("--force-extension keeps -o's extension for an explicit --type; give --type")
        }
    }

    func run() async throws {
        let presets = try global.prepare()
        let limits = input.limits
        let workingDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        // Every job is checked (as `reel export` would before any work) before any is queued: one
        // refusal queues nothing.
        var specs: [JobSpec] = []
        if let manifest {
            specs += try Manifest.resolve(
                try read(manifest), presets: presets, limits: limits, workingDirectory: workingDirectory)
        }
        for asset in assets {
            let request = JobRequest(
                asset: asset, preset: preset ?? "", type: type, output: output, outputDir: outputDir,
                priority: priority, key: key, timeRange: timeRange, metadata: metadata, maxAttempts: maxAttempts,
                forceTranscode: forceTranscode, overwrite: overwrite, forceExtension: forceExtension, maxSize: maxSize,
                background: background)
            specs.append(try request.resolve(presets: presets, limits: limits, workingDirectory: workingDirectory))
        }
        let store = try storeOptions.open(create: true)
        for spec in specs {
            let submission = try await store.submit(spec)
            let (status, created) = (submission.status, submission.created)
            if json {
                CLI.printLine(
                    CLI.jsonLine(
                        SubmitReport(
                            id: status.id, statusFile: store.statusFile(for: status.id) ?? "",
                            state: status.state.rawValue, output: status.output, created: created)))
            } else {
                CLI.printLine(
                    "\(status.id)  \(created ? "queued" : "exists, \(status.state.rawValue)")  \(status.output)")
            }
        }
    }

    /// The manifest's bytes ('-' is stdin).
    private func read(_ source: String) throws -> Data {
        if source == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
        guard let contents = FileManager.default.contents(atPath: source) else {
            throw CLIFailure(message: "cannot read the manifest \(source)", exitCode: 66)
        }
        return contents
    }
}

struct SubmitReport: Encodable {
    var id: String
    var statusFile: String
    var state: String
    var output: String
    var created: Bool
}
