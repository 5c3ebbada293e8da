import ArgumentParser
import Foundation
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem
import Synchronization

#if Photos
    import ReelImage
#endif

/// `reel thumbnail`: still images from a video, like `AVAssetImageGenerator`, and sprite sheets
/// with a WebVTT track for scrubbing previews.
struct ThumbnailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnail",
        abstract: "Write still images (or sprite sheets and a WebVTT track) from a video, upright and SDR.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup(title: "Remote assets") var remote: RemoteOptions
    @OptionGroup var library: LibraryOptions

    @Argument(
        help:
            "The video file, or library:<localIdentifier> for an asset of the library (a Live or Motion Photo's video; with no time given, one picture at its still's moment)."
    )
    var asset: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "For a library:<id> asset, the resource to read: pairedVideo, video, … (default: a Live or Motion Photo's motion, else the asset's own).",
            valueName: "type"))
    var resource: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A time: seconds (12.5), hh:mm:ss.fff, a percentage (50%) or still (a library Live or Motion Photo's still's moment); repeatable, or comma-separated.",
            valueName: "time"))
    var at: [String] = []

    @Option(name: .long, help: ArgumentHelp("This many images, evenly spaced from the start.", valueName: "n"))
    var count: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("One image every interval (10s, 500ms, 2m) from the start.", valueName: "interval"))
    var every: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Fit each image into WxH (320x180, 320x, x180), aspect kept, never enlarged. Sheets default to 160x.",
            valueName: "WxH"))
    var maxSize: String?

    @Flag(
        name: .long,
        help:
            "Decode the frame shown at each time (default: the nearest keyframe, faster; a still's moment is always exact)."
    )
    var exact = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How far from each time the picture may be, before,after in seconds (0.5, 0,2, 500ms,1s): the nearest keyframe within them, else the frame shown at the time. Default: the nearest keyframe for --at; half the interval each way for --count, --every and --sheet, so each time gets its own picture.",
            valueName: "before,after"))
    var tolerance: String?

    @Flag(name: .long, help: "Keep the pixels as stored: do not apply the rotation and mirroring.")
    var noTransform = false

    @Option(
        name: [.short, .long],
        help: ArgumentHelp(
            "A folder (default: the current one; files <asset name>-001.jpg …), or a file pattern such as out/thumb-%03d.jpg; numbered from 1 in time order.",
            valueName: "folder or pattern"))
    var output: String?

    @Option(
        name: .long,
        help: ArgumentHelp("jpeg, png or webp. Default: the pattern's extension, else jpeg.", valueName: "format"))
    var format: String?

    @Option(name: .long, help: ArgumentHelp("1-100, higher is better (JPEG, WebP).", valueName: "1-100"))
    var quality = 90

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Paste the images into sprite sheets of COLSxROWS cells and write a WebVTT track (default every 10s).",
            valueName: "COLSxROWS"))
    var sheet: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --sheet: the WebVTT file (default <asset name>-thumbnails.vtt beside the sheets).", valueName: "file")
    )
    var vtt: String?

    @Flag(name: .long, help: "Replace files that exist.")
    var overwrite = false

    @Flag(
        name: .long,
        help:
            "Print one JSON line per image (requestedTime, actualTime, file, …) on stdout; with --submit, the queued job as `reel submit --json` prints it."
    )
    var json = false

    @Flag(
        name: .long,
        help:
            "Queue the set as a job instead (`reel work` runs it): -o names the folder to create (default <asset name>.thumbnails.<job id>), published whole; the job's result lists every image."
    )
    var submit = false

    @OptionGroup var storeOptions: StoreOptions

    // Taken as it comes, so a negative priority needs no '=' (`--priority -3`).
    @Option(name: .long, parsing: .unconditional, help: "With --submit: higher runs first.")
    var priority: Int?

    @Option(name: .long, help: "With --submit: idempotency key (submitting it again returns the existing job).")
    var key: String?

    @Option(name: .long, help: "With --submit: attempts before the job fails for good (1 to 20).")
    var maxAttempts: Int?

    func validate() throws {
        if !submit && (priority != nil || key != nil || maxAttempts != nil) {
            throw ValidationError("--priority, --key and --max-attempts go with --submit")
        }
        if submit && vtt != nil {
            throw ValidationError("with --submit the WebVTT track is written in the job's folder")
        }
        if submit, let output,
            output.contains("%") || ImageFormat(fileExtension: URL(fileURLWithPath: output).pathExtension) != nil
        {
            throw ValidationError("with --submit, -o names the folder the job creates, not a file or a pattern")
        }
        let chosen = [!at.isEmpty, count != nil, every != nil].filter { $0 }.count
        if chosen > 1 { throw ValidationError("use one of --at, --count and --every") }
        let fromLibrary = LibraryReference.identifier(in: asset) != nil
        // A photo has one moment: no time needed (its file is read for its first bytes only).
        if chosen == 0 && sheet == nil && !fromLibrary && PhotoInput.signature(asset) == nil {
            throw ValidationError("say when: --at, --count or --every")
        }
        if resource != nil && !fromLibrary {
            throw ValidationError("--resource is only for a library asset (library:<id>), not a path")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1, not \(count)") }
        if !(1...100).contains(quality) { throw ValidationError("--quality must be between 1 and 100, not \(quality)") }
        if let maxSize, ThumbnailSetRequest.size(maxSize) == nil {
            throw ValidationError("cannot read --max-size '\(maxSize)'; write WxH, e.g. 320x180, 320x or x180")
        }
        if let sheet, ThumbnailSetRequest.grid(sheet) == nil {
            throw ValidationError("cannot read --sheet '\(sheet)'; write COLSxROWS, e.g. 10x10")
        }
        if vtt != nil && sheet == nil { throw ValidationError("--vtt needs --sheet") }
        if let format, ImageFormat(rawValue: format.lowercased()) == nil && ImageFormat(fileExtension: format) == nil {
            throw ValidationError("unknown image format '\(format)'; use jpeg, png or webp")
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        // Queued, a URL is the worker's to download (under its own network policy).
        if submit && RemoteURL.isRemote(asset) { return try await queue(nil) }
        let local = try await LocalInput.resolve(asset, remote: remote, limits: input.limits, json: false)
        defer { local.cleanUp() }
        var command = self
        command.asset = local.path
        do {
            try await command.run(local)
        } catch {
            throw local.rename(error)
        }
    }

    private func run(_ local: LocalInput) async throws {
        let limits = local.limits(input.limits)
        // A download is named after its URL's file name, not the cache's.
        let downloaded = local.path != local.shown ? local.naming : nil
        let link = library.link(limits: limits, queueDatabase: StoreOptions.environmentDatabaseURL)
        // A library asset is the file (or a Motion Photo's byte range) the library says, checked to be
        // as it was indexed; its pictures are named after the resource.
        var source: LibrarySource?
        if let identifier = LibraryReference.identifier(in: asset) {
            try link.openNow()
            let resolved = try await link.resolve(identifier, resource: resource)
            try resolved.checkUnchanged()
            source = resolved
        }
        // A photo: a file, or a library asset whose resource is a photo file (a Motion Photo's video is a
        // byte range of its JPEG and stays a video).
        if let photoPath = source.map({ $0.byteRange == nil ? $0.path : nil }) ?? asset,
            let photo = PhotoInput.signature(photoPath)
        {
            let named = source.map {
                URL(fileURLWithPath: photoPath).deletingLastPathComponent().appendingPathComponent($0.outputStem)
            }
            return try await writePhoto(photo, path: photoPath, named: named ?? downloaded, limits: limits)
        }
        if submit { return try await queue(source) }
        let when: ThumbnailTimes
        if let count {
            when = .count(count)
        } else if let every {
            when = .every(try ThumbnailTimes.interval(every))
        } else if !at.isEmpty {
            var instants: [ThumbnailTimes.Instant] = []
            for text in at.flatMap({ $0.split(separator: ",").map(String.init) }) {
                instants.append(try ThumbnailTimes.instant(text))
            }
            when = .at(instants)
        } else if sheet == nil, let source {
            // A library asset with no time asked: its still's moment. A Live or Motion Photo that
            // records none (a Samsung Motion Photo) gives the video's start, with a note saying so; a
            // plain video is refused, naming what is missing.
            if source.stillImageTime == nil, source.resource == "pairedVideo" {
                CLI.printNote("\(asset) records no moment for its still; the picture is the video's start (0 s)")
                when = .at([.seconds(0)])
            } else {
                when = .at([.still])
            }
        } else {
            when = .every(10)
        }
        let assetURL = source.map { URL(fileURLWithPath: $0.path) } ?? URL(fileURLWithPath: asset)
        let named = source.map { assetURL.deletingLastPathComponent().appendingPathComponent($0.outputStem) }
        let naming = try Naming(
            output: output, asset: named ?? downloaded ?? assetURL, format: format, sheets: sheet != nil)
        let imageFormat = naming.format
        guard imageFormat.isAvailable else {
            throw ExportError(
                .unsupportedCodec,
                "this FFmpeg's libavcodec has no \(imageFormat == .webp ? "libwebp" : imageFormat.rawValue) encoder, so it cannot write \(imageFormat.rawValue) images; use jpeg or png"
            )
        }
        let probed = try await Asset.load(assetURL, byteRange: source?.byteRange?.range, limits: limits)
        guard probed.videoTrack != nil else { throw ExportError(.noVideo, "\(asset) has no video track") }
        let times = try when.seconds(duration: probed.duration, still: source?.stillImageTime)

        var generator = AssetImageGenerator(asset: probed, limits: limits)
        generator.appliesPreferredTrackTransform = !noTransform
        generator.format = imageFormat
        generator.quality = quality
        if exact, tolerance != nil {
            throw ExportError(.invalidArgument, "--exact means a tolerance of 0; give --exact or --tolerance, not both")
        }
        let tolerances = ThumbnailSetRequest.tolerances(
            times: when, exact: exact, asked: try tolerance.map(ThumbnailSetRequest.tolerance),
            duration: probed.duration)
        generator.requestedTimeToleranceBefore = tolerances.before
        generator.requestedTimeToleranceAfter = tolerances.after
        let grid = sheet.flatMap(ThumbnailSetRequest.grid)
        let box = maxSize.flatMap(ThumbnailSetRequest.size) ?? (grid != nil ? (160, 0) : (0, 0))
        generator.maximumSize = .init(width: box.0, height: box.1)

        // Ctrl-C, SIGTERM and SIGHUP (the terminal closed) stop it as they stop `reel export`: no picture
        // after the one being made, every file written whole (AtomicFile), no temporary left, exit 130.
        let stop = StopRequest()
        let interrupts = CLI.onTerminationSignals { stop.raise() }
        defer { interrupts.forEach { $0.cancel() } }
        try naming.makeFolder()
        do {
            if let grid {
                try await writeSheets(
                    generator, times: times, grid: grid, naming: naming, duration: probed.duration, stop: stop)
            } else {
                try await writeImages(generator, times: times, naming: naming, stop: stop)
            }
        } catch {
            naming.removeFolderIfEmpty()
            throw error
        }
    }

    /// A photo (HEIC, JPEG, PNG, WebP, AVIF, a one-frame GIF) rendered by ReelImage: one picture,
    /// upright, sRGB, fitted into --max-size, never enlarged, no metadata (as video thumbnails).
    private func writePhoto(_ photo: PhotoSignature, path: String, named: URL?, limits: InputLimits) async throws {
        #if Photos
            let what = "\(asset) is a \(photo.name) photo, one picture"
            if submit {
                throw ExportError(.invalidArgument, "\(what): --submit queues videos only; leave it out")
            }
            if count != nil || every != nil || sheet != nil {
                throw ExportError(.invalidArgument, "\(what): use --at 0 or no time, not --count, --every or --sheet")
            }
            for text in at.flatMap({ $0.split(separator: ",").map(String.init) }) {
                let instant = try ThumbnailTimes.instant(text)
                guard instant == .seconds(0) || instant == .percent(0) || instant == .still else {
                    throw ExportError(.invalidArgument, "\(what): its only moment is --at 0, not \(text)")
                }
            }
            if noTransform {
                throw ExportError(
                    .invalidArgument, "\(what): it is always rendered upright (--no-transform is for videos)")
            }
            let naming = try Naming(
                output: output, asset: named ?? URL(fileURLWithPath: path), format: format, sheets: false)
            let file = naming.file(number: 1)
            try checkFree([file])
            let box = maxSize.flatMap(ThumbnailSetRequest.size) ?? (0, 0)
            let outputFormat: ImageOutputFormat =
                switch naming.format {
                case .jpeg: .jpeg
                case .png: .png
                case .webp: .webp
                }
            let image = try await PhotoInput.render(
                path, PhotoRenderOptions(maxWidth: box.0, maxHeight: box.1, format: outputFormat, quality: quality),
                limits: limits)
            try naming.makeFolder()
            do {
                try AtomicFile.write(image.data, to: file, overwrite: overwrite)
            } catch {
                naming.removeFolderIfEmpty()
                throw error
            }
            if json {
                CLI.printLine(
                    CLI.jsonLine(
                        Line(
                            requestedTime: 0, actualTime: 0, keyframe: true, file: file.path, width: image.width,
                            height: image.height)))
            } else {
                CLI.printLine("wrote \(file.path) (\(image.width)x\(image.height), \(photo.name) photo)")
            }
        #else
            throw LeftOut.photos.failure
        #endif
    }

    private func writeImages(
        _ generator: AssetImageGenerator, times: [Double], naming: Naming, stop: StopRequest
    ) async throws {
        let files = (1...max(1, times.count)).map { naming.file(number: $0) }
        try checkFree(files)
        var number = 0
        for await result in generator.images(for: times) {
            // Leaving the loop ends the stream, which stops the decoding.
            if stop.isRaised { break }
            let image = try result.image
            let file = files[number]
            number += 1
            try AtomicFile.write(image.data, to: file, overwrite: overwrite)
            if json {
                CLI.printLine(
                    CLI.jsonLine(
                        Line(
                            requestedTime: image.requestedTime, actualTime: image.actualTime,
                            keyframe: image.isKeyframe, file: file.path, width: image.width, height: image.height)))
            } else {
                CLI.printLine(
                    String(
                        format: "wrote %@ (%dx%d, asked %.3f s, frame at %.3f s%@)", file.path, image.width,
                        image.height, image.requestedTime, image.actualTime, image.isKeyframe ? ", keyframe" : ""))
            }
        }
        try stop.check()
    }

    private func writeSheets(
        _ generator: AssetImageGenerator, times: [Double], grid: (Int, Int), naming: Naming, duration: Double,
        stop: StopRequest
    ) async throws {
        let perSheet = grid.0 * grid.1
        let sheetCount = (times.count + perSheet - 1) / perSheet
        let files = (1...max(1, sheetCount)).map { naming.file(number: $0) }
        let track = vtt.map { URL(fileURLWithPath: $0) } ?? naming.track
        try checkFree(files + [track])
        var cues: [ThumbnailTrack.Cue] = []
        var number = 0
        for try await sheet in generator.sheets(for: times, columns: grid.0, rows: grid.1) {
            if stop.isRaised { break }
            let file = files[number]
            number += 1
            try AtomicFile.write(Data(sheet.data), to: file, overwrite: overwrite)
            let reference = Self.relativePath(of: file, from: track.deletingLastPathComponent())
            for pick in sheet.picks {
                let cue = ThumbnailTrack.Cue(
                    start: pick.requestedSeconds, sheet: reference, x: pick.x ?? 0, y: pick.y ?? 0,
                    width: sheet.pictureWidth, height: sheet.pictureHeight)
                cues.append(cue)
                if json {
                    CLI.printLine(
                        CLI.jsonLine(
                            Line(
                                requestedTime: pick.requestedSeconds, actualTime: pick.actualSeconds,
                                keyframe: pick.isKeyframe, file: file.path, width: sheet.pictureWidth,
                                height: sheet.pictureHeight, x: pick.x, y: pick.y)))
                }
            }
            if !json {
                CLI.printLine("wrote \(file.path) (\(sheet.width)x\(sheet.height), \(sheet.picks.count) images)")
            }
        }
        try stop.check()
        try AtomicFile.write(
            Data(ThumbnailTrack.webVTT(cues: cues, duration: duration).utf8), to: track, overwrite: overwrite)
        CLI.printLine(json ? CLI.jsonLine(TrackLine(track: track.path)) : "wrote \(track.path)")
    }

    /// `--submit`: the same options as a `ThumbnailSetRequest`, checked and queued as `reel submit`
    /// queues an export (the asset probed, the folder free), and the job printed as it prints one.
    private func queue(_ source: LibrarySource?) async throws {
        let set = ThumbnailSetRequest(
            at: at.isEmpty ? nil : at, count: count, every: every, maxSize: maxSize, exact: exact ? true : nil,
            noTransform: noTransform ? true : nil, format: format, quality: quality, sheet: sheet, tolerance: tolerance)
        var request = JobRequest(
            asset: asset, export: ExportRequest(output: output, overwrite: overwrite ? true : nil), priority: priority,
            key: key, maxAttempts: maxAttempts)
        request.thumbnails = set
        request.librarySource = source
        if RemoteURL.isRemote(asset) {
            request.networkAccessAllowed = remote.networkAccess
            request.sha256 = remote.sha256
        }
        let spec: JobSpec
        let warning: String?
        do throws(ExportError) {
            spec = try request.resolve(
                presets: .shipped, limits: input.limits,
                workingDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            warning = try OutputAccess.check(spec, workedBySubmitter: storeOptions.workedBySubmitter)
        } catch {
            if json {
                CLI.printLine(CLI.jsonLine(SubmitReport(asset: RemoteURL.shown(asset), line: nil, refusal: error)))
                CLI.failurePrintedAsJSON.withLock { $0 = true }
            }
            throw error
        }
        let store = try storeOptions.open(create: true)
        try await SubmitReport.submit(spec, to: store, json: json, warnings: warning.map { [$0] } ?? [])
    }

    /// Refuses before any work when two files would share a name (`-o` named one file for several)
    /// or a file to write exists (unless --overwrite).
    private func checkFree(_ files: [URL]) throws {
        if Set(files).count < files.count {
            throw ExportError(
                .invalidArgument,
                "-o names one file but \(files.count) are to be written; name a folder or a pattern such as thumb-%03d.jpg"
            )
        }
        guard !overwrite else { return }
        for file in files where FileManager.default.fileExists(atPath: file.path) {
            throw ExportError(.outputExists, "\(file.path) already exists (ask to overwrite it: --overwrite)")
        }
    }

    /// One image in `--json`.
    struct Line: Encodable {
        var requestedTime: Double
        var actualTime: Double
        var keyframe: Bool
        var file: String
        var width: Int
        var height: Int
        var x: Int? = nil
        var y: Int? = nil
    }

    struct TrackLine: Encodable {
        var track: String
    }

    /// Where files go: a folder and a name pattern with one `%d`-style number.
    struct Naming {
        var folder: URL
        /// Text before and after the number, and the number's width (`%03d` → 3).
        var prefix: String
        var suffix: String
        var digits: Int
        var format: ImageFormat
        var stem: String
        /// `-o` named one image file (`poster.jpg`): fine for one image, refused for several.
        var single: URL?
        /// `-o` named a folder that is not there yet (its parent is): made before the first picture is
        /// written and removed again if none was, as `export -o` makes a ladder's folder.
        var makesFolder = false

        /// `sheets`: the default names are `<asset name>-sprite-001.jpg`, not `<asset name>-001.jpg`.
        init(output: String?, asset: URL, format explicit: String?, sheets: Bool) throws {
            stem = asset.deletingPathExtension().lastPathComponent
            let path = output ?? "."
            let chosen = explicit.flatMap { ImageFormat(rawValue: $0.lowercased()) ?? ImageFormat(fileExtension: $0) }
            if let percent = path.lastIndex(of: "%"), !path[percent...].contains("/") {
                let url = URL(fileURLWithPath: path)
                folder = url.deletingLastPathComponent()
                let name = url.lastPathComponent
                guard let range = name.range(of: #"%0?[0-9]*d"#, options: .regularExpression),
                    !name[range.upperBound...].contains("%")
                else {
                    throw ExportError(
                        .invalidArgument, "the pattern '\(path)' needs one number like %d or %03d in its file name")
                }
                prefix = String(name[..<range.lowerBound])
                suffix = String(name[range.upperBound...])
                digits = Int(name[range].dropFirst().dropLast()) ?? 0
                let fromExtension =
                    suffix.contains(".")
                    ? ImageFormat(
                        fileExtension: String(suffix.split(separator: ".", omittingEmptySubsequences: false).last!))
                    : nil
                if let chosen, let fromExtension, chosen != fromExtension {
                    throw ExportError(
                        .invalidArgument,
                        "the pattern's extension says \(fromExtension.rawValue) but --format says \(chosen.rawValue)")
                }
                self.format = chosen ?? fromExtension ?? .jpeg
                if fromExtension == nil { suffix += "." + self.format.fileExtension }
            } else if let named = ImageFormat(fileExtension: URL(fileURLWithPath: path).pathExtension),
                !FileManager.default.fileExists(atPath: path)
            {
                let url = URL(fileURLWithPath: path)
                if let chosen, chosen != named {
                    throw ExportError(
                        .invalidArgument,
                        "the file's extension says \(named.rawValue) but --format says \(chosen.rawValue)")
                }
                single = url
                folder = url.deletingLastPathComponent()
                self.format = named
                prefix = ""
                suffix = ""
                digits = 0
            } else {
                folder = URL(fileURLWithPath: path, isDirectory: true)
                self.format = chosen ?? .jpeg
                prefix = stem + (sheets ? "-sprite-" : "-")
                suffix = "." + self.format.fileExtension
                digits = 3
            }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory) {
                guard isDirectory.boolValue else {
                    throw ExportError(.outputFailed, "the output folder \(folder.path) is a file")
                }
            } else {
                // One rule for every output: the folder an output is gets made, its parent must exist.
                let parent = folder.deletingLastPathComponent()
                guard single == nil, FileManager.default.fileExists(atPath: parent.path, isDirectory: &isDirectory),
                    isDirectory.boolValue
                else {
                    throw ExportError(.outputFailed, "the output folder \(folder.path) does not exist")
                }
                makesFolder = true
            }
        }

        /// Makes the folder `-o` named when it is not there (`makesFolder`).
        func makeFolder() throws(ExportError) {
            guard makesFolder, mkdir(folder.path, 0o755) != 0, errno != EEXIST else { return }
            throw ExportError(.outputFailed, "cannot create \(folder.path): \(String(cString: strerror(errno)))")
        }

        /// Removes the folder this command made, when nothing was written into it.
        func removeFolderIfEmpty() {
            if makesFolder { rmdir(folder.path) }
        }

        func file(number: Int) -> URL {
            if let single { return single }
            let text = String(number)
            let padded = String(repeating: "0", count: max(0, digits - text.count)) + text
            return folder.appendingPathComponent(prefix + padded + suffix)
        }

        /// The WebVTT track's default place.
        var track: URL { folder.appendingPathComponent(stem + "-thumbnails.vtt") }
    }

    /// `file`'s path relative to `folder` when inside it, else absolute (a WebVTT cue's URL).
    static func relativePath(of file: URL, from folder: URL) -> String {
        let base = folder.standardizedFileURL.path
        let path = file.standardizedFileURL.path
        let prefix = base.hasSuffix("/") ? base : base + "/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
    }
}

/// Raised by a stop signal; `reel thumbnail` looks at it between pictures.
private final class StopRequest: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .sequentiallyConsistent) }
    var isRaised: Bool { raised.load(ordering: .sequentiallyConsistent) }
    /// Throws `cancelled` (exit 130, as a cancelled export) once raised.
    func check() throws(ExportError) {
        if isRaised { throw ExportError(.cancelled, "the thumbnails were cancelled") }
    }
}
