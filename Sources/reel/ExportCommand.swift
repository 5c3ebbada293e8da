import ArgumentParser
import Dispatch
import Foundation
import ReelExport

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export one asset with a preset, in this process, showing progress.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions

    @Argument(help: "The media file to export.")
    var asset: String

    @Option(name: .long, help: "Preset name, e.g. 1280x720, MediumQuality, Passthrough (see `reel presets`).")
    var preset: String

    @Option(
        name: .long,
        help:
            "Output type: mp4, mov, m4v, m4a, or an Apple type identifier. Default: from -o's extension, else mp4 (m4a for audio presets)."
    )
    var type: String?

    @Option(name: .shortAndLong, help: "Output file. Default: <asset name>.<preset>.<type> in the current folder.")
    var output: String?

    @Flag(name: .long, help: "Keep -o's extension even though it is not the --type's (needs --type).")
    var forceExtension = false

    @Flag(
        name: .long,
        help:
            "Print the plan (method, size, rates, streams, estimated bytes) without writing anything; with --json, as one JSON object."
    )
    var estimate = false

    @Option(
        name: .long,
        help: ArgumentHelp("Export only part of the asset: start-end in seconds or [hh:]mm:ss.", valueName: "start-end")
    )
    var timeRange: String?

    @Option(name: .long, help: "Source metadata to keep: keep (default), sharing (drops location and device), strip.")
    var metadata: String = "keep"

    @Flag(name: .long, help: "Do not move the moov atom to the front (faster finish, no progressive playback).")
    var noNetworkOptimization = false

    @Option(
        name: .long,
        help: ArgumentHelp("Stop the export as stalled after this many seconds without progress.", valueName: "seconds")
    )
    var stallTimeout: Double = 120

    @Flag(name: .long, help: "Re-encode even when the source already satisfies the preset (no smart passthrough).")
    var forceTranscode = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Threads for the video decoder and for the encoder; 0 lets them use every core.", valueName: "n"))
    var threads = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Make the file fit this size (16MB, 8MiB, 500KB; MB = 1,000,000 bytes): the rate, and if need be the picture size, is chosen to fit; the whole duration is kept.",
            valueName: "size"))
    var maxSize: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Colour transparent pixels of an animated GIF or APNG become: #rrggbb, black (default) or white.",
            valueName: "colour"))
    var background: String = "black"

    @Flag(name: .long, help: "Replace the output file if it exists.")
    var overwrite = false

    @Flag(name: .long, help: "Print progress and the result (or the error) as JSON lines on stdout.")
    var json = false

    func validate() throws {
        if let type, OutputType(name: type) == nil {
            throw ValidationError("unknown output type '\(type)'; use mp4, mov, m4v or m4a")
        }
        if forceExtension && type == nil {
            throw ValidationError("--force-extension keeps -o's extension for an explicit --type; give --type")
        }
        if let timeRange, TimeRange(parsing: timeRange) == nil {
            throw ValidationError(
                "cannot read the time range '\(timeRange)'; write start-end, e.g. 5-12.5 or 00:01:00-00:02:30")
        }
        if let maxSize, SizeLimit.parseBytes(maxSize) == nil {
            throw ValidationError("cannot read the size '\(maxSize)'; write e.g. 16MB, 8MiB or 500KB")
        }
        if MetadataPolicy(rawValue: metadata) == nil {
            throw ValidationError("unknown metadata policy '\(metadata)'; use keep, sharing or strip")
        }
        if RGBColor(parsing: background) == nil {
            throw ValidationError(RGBColor.unreadable(background))
        }
        if !(0...64).contains(threads) {
            throw ValidationError("--threads must be between 0 (automatic) and 64, not \(threads)")
        }
    }

    func run() async throws {
        do {
            try await runExport()
        } catch let error as ExportError where json {
            CLI.printLine(ExportEvent.failed(.init(error)).jsonLine)
            throw error
        }
    }

    private func runExport() async throws {
        let presets = try global.prepare()
        let assetURL = URL(fileURLWithPath: asset)
        let limits = input.limits
        // Mistakes in the request fail before the asset is even opened.
        let chosen = try presets.preset(named: preset)
        let outputType = try OutputType.infer(
            explicit: type, outputPath: output, preset: chosen, forceExtension: forceExtension)
        let probed = try await Asset.load(assetURL, limits: limits)
        let session = try ExportSession(asset: probed, presetName: chosen.name, presets: presets, limits: limits)
        session.outputFileType = outputType
        session.timeRange = timeRange.flatMap(TimeRange.init(parsing:))
        session.metadataPolicy = MetadataPolicy(rawValue: metadata) ?? .keep
        session.shouldOptimizeForNetworkUse = !noNetworkOptimization
        session.overwritesExistingFile = overwrite
        session.stallTimeout = stallTimeout
        session.forceTranscode = forceTranscode
        session.fileLengthLimit = maxSize.flatMap(SizeLimit.parseBytes)
        session.backgroundColor = RGBColor(parsing: background) ?? .black
        session.codecThreads = threads
        let destination = URL(
            fileURLWithPath: output
                ?? OutputType.defaultFileName(asset: assetURL, preset: session.preset, type: outputType))
        session.outputURL = destination
        // Decide compatibility before any work, so an impossible export fails at once.
        let plan = try session.determineCompatibility()
        if estimate {
            CLI.printLine(json ? CLI.jsonLine(plan) : PlanPrinter.describe(plan))
            return
        }

        // Ctrl-C and SIGTERM cancel the export; the temporary file is removed and nothing is left.
        let interrupts = CLI.onTerminationSignals { session.cancelExport() }
        defer { interrupts.forEach { $0.cancel() } }

        let bar = ProgressPrinter(json: json, terminal: CLI.stderrIsTerminal)
        let watcher = Task {
            for await update in session.progressUpdates { bar.show(update) }
        }
        do {
            try await session.export()
        } catch {
            await watcher.value
            bar.finishLine()
            throw error
        }
        await watcher.value
        bar.finishLine()
        guard let result = session.result else { throw CLIFailure(message: "the export finished without a result") }
        if json {
            let completion = ExportEvent.Completion(
                output: destination.path, preset: session.preset.name, type: outputType.rawValue, result: result)
            CLI.printLine(ExportEvent.completed(completion).jsonLine)
        } else {
            var facts = [CLI.formatBytes(result.bytes), String(format: "%.2f s", result.durationSeconds)]
            if let width = result.width, let height = result.height { facts.insert("\(width)x\(height)", at: 0) }
            facts.append([result.videoCodec, result.audioCodec].compactMap { $0 }.joined(separator: "+"))
            if result.networkOptimized { facts.append("moov first") }
            if result.method != .transcode { facts.append(result.method.rawValue) }
            facts.append(String(format: "in %.1f s", result.elapsedSeconds))
            CLI.printLine("wrote \(destination.path) (\(facts.joined(separator: ", ")))")
        }
    }
}

/// Draws the progress bar on a terminal, or prints JSON progress lines.
final class ProgressPrinter: Sendable {
    let json: Bool
    let terminal: Bool

    init(json: Bool, terminal: Bool) {
        self.json = json
        self.terminal = terminal
    }

    func show(_ update: ExportSession.Progress) {
        if json {
            CLI.printLine(ExportEvent.progress(.init(update)).jsonLine)
            return
        }
        guard terminal else { return }
        let width = 30
        let filled = Int((update.fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let percent = String(format: "%5.1f%%", update.fraction * 100)
        let fps = String(format: "%.0f fps", update.framesPerSecond)
        let eta = update.secondsRemaining.map { "ETA " + CLI.formatDuration($0) } ?? "ETA --:--"
        let phase = update.phase == .finalizing ? "finalizing" : "exporting"
        try? FileHandle.standardError.write(
            contentsOf: Data("\r\u{1B}[K\(phase) \(bar) \(percent)  \(fps)  \(eta)".utf8))
    }

    func finishLine() {
        if terminal && !json { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
    }
}
