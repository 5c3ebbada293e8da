import ArgumentParser
import Dispatch
import Foundation
import ReelExport

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export one asset with a preset, in this process, showing progress.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var presetOptions: PresetOptions
    @OptionGroup var input: InputOptions
    @OptionGroup var library: LibraryOptions
    @OptionGroup(title: "Remote assets") var remote: RemoteOptions

    @Argument(
        help:
            "The media file to export, library:<localIdentifier> for an asset of the library, or an https URL (with --network-access)."
    )
    var asset: String

    @OptionGroup(title: ExportOptions.title) var options: ExportOptions

    @Flag(
        name: .long,
        help:
            "Print the plan (method, size, rates, streams, the location and device keys it writes, estimated bytes) without writing the output; with --json, as one JSON object. The size of a re-encode is measured by encoding four samples of at least 60 frames (a short export whole) at the plan's settings."
    )
    var estimate = false

    @Flag(
        name: .long,
        help:
            "With --estimate: give the size from Reel's model of the encoder instead of sample encodes (instant, no frame read, but it can miss by half on content unlike its calibration)."
    )
    var modelEstimate = false

    @Option(
        name: .long,
        help: ArgumentHelp("Stop the export as stalled after this many seconds without progress.", valueName: "seconds")
    )
    var stallTimeout: Double = 120

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Threads for the video decoder and for the encoder; 0 lets them use every core.", valueName: "n"))
    var threads = 0

    @Flag(name: .long, help: "Print progress and the result (or the error) as JSON lines on stdout.")
    var json = false

    func validate() throws {
        // A ladder (`--type hls`, `--ladder`) has a default preset, or names its own.
        if options.preset == nil && options.type?.lowercased() != "hls" && options.ladder == nil {
            throw ValidationError("--preset is required")
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
            CLI.failurePrintedAsJSON.withLock { $0 = true }
            throw error
        }
    }

    private func runExport() async throws {
        let presets = try presetOptions.prepare(global)
        let limits = input.limits
        // `-o https://…`: exported into a staging folder, then uploaded.
        var request = options.request
        let upload = try OutputUpload.prepare(options.output, remote: remote)
        if let upload { request.output = upload.staged }
        // Mistakes in the request fail before the asset is even opened (or downloaded).
        let settings: ExportSettings
        do {
            settings = try request.resolve(presets: presets)
            if upload != nil && (settings.ladder != nil || settings.poster || settings.saveToLibrary) {
                throw CLIFailure(
                    message: "-o <url> uploads one file: not a ladder, a poster or a save to the library (yet)",
                    exitStatus: .usage)
            }
        } catch {
            upload?.discard()
            throw error
        }
        try options.request.checkResource(asset: asset)
        // A URL is downloaded first (its own phase); the export then reads the local copy.
        let local = try await LocalInput.resolve(asset, remote: remote, limits: limits, json: json)
        defer { local.cleanUp() }
        do {
            try await export(
                local, presets: presets, settings: settings, limits: local.limits(limits), output: request.output,
                upload: upload)
        } catch {
            // The staging folder stays only for a verified output whose upload failed.
            if let upload, !((error as? ExportError)?.code == .uploadFailed) { upload.discard() }
            // Messages name the URL (without its query), never the download cache's file.
            throw local.rename(error)
        }
    }

    private func export(
        _ local: LocalInput, presets: PresetLibrary, settings: ExportSettings, limits: InputLimits, output: String?,
        upload: OutputUpload?
    ) async throws {
        let metadataDefault = try MetadataDefault.fromEnvironment() ?? .keep
        let link = library.link(limits: limits, queueDatabase: StoreOptions.environmentDatabaseURL)
        // A library asset is the file (or a Motion Photo's byte range) the library says, checked to be
        // as it was indexed; its output is named after the resource.
        var source: LibrarySource?
        if LibraryReference.identifier(in: asset) != nil || settings.saveToLibrary { try link.openNow() }
        if let identifier = LibraryReference.identifier(in: asset) {
            let resolved = try await link.resolve(identifier, resource: options.resource)
            try resolved.checkUnchanged()
            source = resolved
        }
        let assetURL = source.map { URL(fileURLWithPath: $0.path) } ?? URL(fileURLWithPath: local.path)
        let probed = try await Asset.load(assetURL, byteRange: source?.byteRange?.range, limits: limits)
        let session = try ExportSession(
            asset: probed, presetName: settings.preset.name, presets: presets, limits: limits)
        session.apply(settings, metadataDefault: metadataDefault)
        if let source {
            session.metadataOverrides = source.metadata(
                saving: settings.saveToLibrary, keepContentIdentifier: settings.keepContentIdentifier)
            // A Live or Motion Photo's poster is the picture its still shows.
            session.posterTime = source.stillImageTime
        }
        session.stallTimeout = stallTimeout
        session.codecThreads = threads
        let named = source.map { URL(fileURLWithPath: FileManager.default.currentDirectoryPath + "/" + $0.outputStem) }
        // Named as `reel submit` names it (`OutputNaming`) unless -o names it.
        let destination = URL(
            fileURLWithPath: output.map {
                settings.ladder != nil && $0.hasSuffix("/") ? String($0.dropLast()) : $0
            }
                ?? (settings.ladder.map {
                    OutputNaming.ladderFolder(asset: named ?? local.naming, ladder: $0, preset: session.preset)
                }
                    ?? OutputNaming.file(
                        asset: named ?? local.naming, preset: session.preset, type: settings.outputType)))
        session.outputURL = destination
        // Decide compatibility before any work, so an impossible export fails at once.
        let plan = try session.determineCompatibility()
        if settings.ladder != nil && estimate {
            throw CLIFailure(message: "--estimate does not plan hls ladders yet", exitStatus: .usage)
        }
        if estimate {
            var shown = plan
            if !modelEstimate {
                // Ctrl-C, SIGTERM and SIGHUP stop the sample encodes; their folder is removed.
                let interrupts = CLI.onTerminationSignals { session.cancelExport() }
                defer { interrupts.forEach { $0.cancel() } }
                shown = try await session.measuredPlan()
            }
            CLI.printLine(json ? CLI.jsonLine(shown) : PlanPrinter.describe(shown))
            return
        }
        if modelEstimate {
            throw CLIFailure(message: "--model-estimate goes with --estimate", exitStatus: .usage)
        }

        // Ctrl-C, SIGTERM and SIGHUP cancel the export; the temporary file is removed and nothing is left.
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
        // The verified output goes to its URL; done only once the server has it.
        let uploaded = try await upload?.send(json: json)
        if let ladder = session.ladderResult, !json {
            // An HDR ladder's H.264 SDR rungs and HEVC HDR rungs share their sizes: the codec tells them apart.
            let mixed = Set(ladder.video.map { $0.codecs.prefix(4) }).count > 1
            let rungs = ladder.video.map {
                (mixed
                    ? ($0.codecs.hasPrefix("avc1") ? "H.264 SDR " : $0.codecs.hasPrefix("av01") ? "AV1 " : "HEVC ")
                    : "")
                    + "\($0.width ?? 0)x\($0.height ?? 0) \(String(format: "%.2f", Double($0.peakBitrate) / 1e6)) Mbit/s peak"
            }
            var facts = rungs + (ladder.audio.map { ["audio \($0.averageBitrate / 1000) kbit/s"] } ?? [])
            if !ladder.dropped.isEmpty {
                facts.append("dropped above the source: " + ladder.dropped.joined(separator: ", "))
            }
            facts.append(String(format: "in %.1f s", result.elapsedSeconds))
            let manifests = [ladder.master, ladder.dash].compactMap { $0.map { destination.path + "/" + $0 } }
            CLI.printLine("wrote \(manifests.joined(separator: " and ")) (\(facts.joined(separator: ", ")))")
            // Per title: each rung's CRF and score, and why a rung was left out.
            if let quality = ladder.quality {
                CLI.printLine(
                    String(format: "  per title at \(quality.target), searched in %.1f s", quality.searchSeconds))
                for rung in quality.rungs { CLI.printLine("  \(rung.size)  \(rung.note)") }
                for rung in quality.sdrRungs { CLI.printLine("  H.264 SDR \(rung.size)  \(rung.note)") }
            }
            return
        }
        // Done only once the output is an asset of the library (saving it again is harmless).
        let saved = settings.saveToLibrary ? try await link.saveOutput(at: destination.path, from: source) : nil
        if json {
            var completion = ExportEvent.Completion(
                output: uploaded?.url ?? destination.path, preset: session.preset.name,
                type: session.ladderResult == nil
                    ? settings.outputType.rawValue : (settings.ladder?.folderExtension ?? "hls"), result: result,
                source: source,
                savedLocalIdentifier: saved, ladder: session.ladderResult)
            completion.upload = uploaded
            CLI.printLine(ExportEvent.completed(completion).jsonLine)
        } else {
            var facts = [CLI.formatBytes(result.bytes), String(format: "%.2f s", result.durationSeconds)]
            if let width = result.width, let height = result.height { facts.insert("\(width)x\(height)", at: 0) }
            facts.append([result.videoCodec, result.audioCodec].compactMap { $0 }.joined(separator: "+"))
            if result.networkOptimized { facts.append("moov first") }
            if result.method != .transcode { facts.append(result.method.rawValue) }
            if let range = result.timeRange, let requested = result.requestedTimeRange, range != requested {
                facts.append(
                    String(format: "%.3f-%.3f s of the asset", range.start, range.end ?? 0) + " (asked \(requested))")
            }
            if let metadata = result.metadata, !(metadata.location + metadata.device + metadata.identifiers).isEmpty {
                facts.append(
                    "metadata: " + (metadata.location + metadata.device + metadata.identifiers).joined(separator: ", "))
            }
            facts.append(String(format: "in %.1f s", result.elapsedSeconds))
            if let source {
                facts.append("from \(source.reference) (\(source.resource)\(source.byteRange.map { ", \($0)" } ?? ""))")
            }
            CLI.printLine(
                "wrote \(uploaded.map { "\($0.url) (uploaded)" } ?? destination.path) (\(facts.joined(separator: ", ")))"
            )
            if let poster = result.poster {
                let size = poster.width.flatMap { w in poster.height.map { "\(w)x\($0), " } } ?? ""
                CLI.printLine(
                    "wrote \(poster.path) (poster, \(size)\(CLI.formatBytes(poster.bytes)), at "
                        + String(format: "%.2f s", poster.seconds) + ")")
            }
            if let quality = result.quality { CLI.printLine(PlanPrinter.describe(quality)) }
            if let saved { CLI.printLine("saved to the library as \(saved)") }
        }
    }
}
