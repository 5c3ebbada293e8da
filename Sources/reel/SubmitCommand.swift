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

    @Option(name: .long, help: "Attempts before a job fails for good.")
    var maxAttempts: Int = 3

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Submit the jobs of a JSON-lines file, one job per line ('-' reads stdin). The whole batch is rejected if any line is invalid.",
            valueName: "file"))
    var manifest: String?

    @Flag(name: .long, help: "Re-encode even when the source already satisfies the preset (no smart passthrough).")
    var forceTranscode = false

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
        if !(1...20).contains(maxAttempts) { throw ValidationError("--max-attempts must be between 1 and 20") }
    }

    func run() async throws {
        let presets = try global.prepare()
        let store = try storeOptions.open(create: true)
        var specs: [JobSpec] = []
        if let manifest {
            specs += try ManifestReader(presets: presets, limits: input.limits).read(manifest)
        }
        for asset in assets {
            let line = ManifestReader.Line(
                asset: asset, preset: preset ?? "", type: type, output: output, outputDir: outputDir,
                priority: priority,
                key: key, timeRange: timeRange, metadata: metadata, maxAttempts: maxAttempts,
                forceTranscode: forceTranscode)
            do {
                specs.append(try ManifestReader(presets: presets, limits: input.limits).spec(line))
            } catch let error as ManifestReader.Problem {
                throw CLIFailure(message: error.message, exitCode: 64)
            }
        }
        for spec in specs {
            let submission = try await store.submit(spec)
            let (status, created) = (submission.status, submission.created)
            if json {
                CLI.printLine(
                    CLI.jsonLine(
                        SubmitReport(
                            id: status.id, statusFile: store.statusFile(for: status.id) ?? "",
                            state: status.state.rawValue,
                            output: status.output, created: created)))
            } else {
                CLI.printLine(
                    "\(status.id)  \(created ? "queued" : "exists, \(status.state.rawValue)")  \(status.output)")
            }
        }
    }
}

struct SubmitReport: Encodable {
    var id: String
    var statusFile: String
    var state: String
    var output: String
    var created: Bool
}

/// Turns command-line arguments or manifest lines into job specs, checking everything before any
/// job is queued.
struct ManifestReader {
    let presets: PresetLibrary
    /// The worker checks again at run time; this catches a bad asset before it is queued.
    let limits: InputLimits

    /// One job as a manifest line (and as the command line) states it.
    struct Line: Codable {
        var asset: String
        var preset: String
        var type: String?
        var output: String?
        var outputDir: String?
        var priority: Int?
        var key: String?
        var timeRange: String?
        var metadata: String?
        var maxAttempts: Int?
        var forceTranscode: Bool?
    }

    struct Problem: Error {
        var message: String
    }

    /// Reads a whole manifest; throws one error listing every bad line (by number) if any is bad.
    func read(_ source: String) throws -> [JobSpec] {
        let data: Data
        if source == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: source) else {
                throw CLIFailure(message: "cannot read the manifest \(source)", exitCode: 66)
            }
            data = contents
        }
        var specs: [JobSpec] = []
        var problems: [String] = []
        let decoder = JSONDecoder()
        for (number, raw) in String(decoding: data, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).enumerated() {
            let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty || text.hasPrefix("#") { continue }
            do {
                let line = try decoder.decode(Line.self, from: Data(text.utf8))
                specs.append(try spec(line))
            } catch let problem as Problem {
                problems.append("line \(number + 1): \(problem.message)")
            } catch DecodingError.keyNotFound(let key, _) {
                problems.append("line \(number + 1): missing \"\(key.stringValue)\"")
            } catch DecodingError.typeMismatch(_, let context) {
                problems.append(
                    "line \(number + 1): \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
                )
            } catch {
                problems.append("line \(number + 1): not a JSON object")
            }
        }
        if !problems.isEmpty {
            throw CLIFailure(
                message: "manifest rejected, nothing was queued: " + problems.joined(separator: "; "), exitCode: 65)
        }
        if specs.isEmpty { throw CLIFailure(message: "the manifest has no jobs", exitCode: 65) }
        return specs
    }

    func spec(_ line: Line) throws -> JobSpec {
        let preset: Preset
        do {
            preset = try presets.preset(named: line.preset)
        } catch {
            throw Problem(message: "unknown preset '\(line.preset)'")
        }
        let assetURL = URL(fileURLWithPath: line.asset).standardizedFileURL
        do {
            try Asset.checkAccess(assetURL, limits: limits)
        } catch {
            throw Problem(message: error.message)
        }
        var outputType: OutputType
        if let name = line.type {
            guard let type = OutputType(name: name) else { throw Problem(message: "unknown output type '\(name)'") }
            outputType = type
        } else if let output = line.output, let type = OutputType(name: URL(fileURLWithPath: output).pathExtension) {
            outputType = type
        } else {
            outputType = ExportPlanner.defaultType(for: preset)
        }
        let outputPath: String
        if let output = line.output {
            outputPath = URL(fileURLWithPath: output).standardizedFileURL.path
        } else {
            let folder = URL(fileURLWithPath: line.outputDir ?? FileManager.default.currentDirectoryPath)
                .standardizedFileURL
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw Problem(message: "the output folder \(folder.path) does not exist")
            }
            let stem = assetURL.deletingPathExtension().lastPathComponent
            outputPath = folder.appendingPathComponent("\(stem).\(preset.name).{id}.\(outputType.fileExtension)").path
        }
        var range: TimeRange?
        if let text = line.timeRange {
            guard let parsed = TimeRange(parsing: text) else {
                throw Problem(message: "cannot read the time range '\(text)'")
            }
            range = parsed
        }
        guard let metadata = MetadataPolicy(rawValue: line.metadata ?? "keep") else {
            throw Problem(message: "unknown metadata policy '\(line.metadata ?? "")'")
        }
        if let key = line.key, key.utf8.count > 100 || key.isEmpty {
            throw Problem(message: "a key must be 1 to 100 bytes")
        }
        return JobSpec(
            asset: assetURL.path, preset: preset.name, outputType: outputType, output: outputPath,
            priority: line.priority ?? 0, key: line.key, timeRange: range, metadata: metadata,
            maxAttempts: max(1, min(20, line.maxAttempts ?? 3)), forceTranscode: line.forceTranscode ?? false)
    }
}
