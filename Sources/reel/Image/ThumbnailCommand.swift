import ArgumentParser
import Foundation
import ReelExport
import ReelMedia
import ReelQueue
import ReelSystem

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

    @Option(
        name: .long,
        help: ArgumentHelp("Stop as stalled after this many seconds without progress.", valueName: "seconds"))
    var stallTimeout: Double = 120

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
        let fromLibrary = LibraryReference.identifier(in: asset) != nil
        if resource != nil && !fromLibrary {
            throw ValidationError("--resource is only for a library asset (library:<id>), not a path")
        }
        if vtt != nil && sheet == nil { throw ValidationError("--vtt needs --sheet") }
        // The set's own checks, in its words, before anything is read or downloaded. A library asset
        // or a photo needs no time (a still's moment, a photo's one picture).
        var set = setRequest
        if set.asksNoTimes && (fromLibrary || PhotoInput.signature(asset) != nil) { set.at = ["still"] }
        do throws(ExportError) {
            _ = try set.check()
        } catch {
            // A format this FFmpeg cannot write is refused when the set runs (a photo is not FFmpeg's).
            if error.code == .invalidArgument { throw ValidationError(error.message) }
        }
    }

    /// The options as a `ThumbnailSetRequest`: what `--submit` queues and the foreground run makes.
    var setRequest: ThumbnailSetRequest {
        ThumbnailSetRequest(
            at: at.isEmpty ? nil : at, count: count, every: every, maxSize: maxSize, exact: exact ? true : nil,
            noTransform: noTransform ? true : nil, format: format, quality: quality, sheet: sheet, tolerance: tolerance)
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
        var set = setRequest
        if set.asksNoTimes, let source {
            // A library asset with no time asked: its still's moment. A Live or Motion Photo that
            // records none (a Samsung Motion Photo) gives the video's start, with a note saying so; a
            // plain video is refused, naming what is missing.
            if source.stillImageTime == nil, source.resource == "pairedVideo" {
                CLI.printNote("\(asset) records no moment for its still; the picture is the video's start (0 s)")
                set.at = ["0"]
            } else {
                set.at = ["still"]
            }
        }
        let assetURL = source.map { URL(fileURLWithPath: $0.path) } ?? URL(fileURLWithPath: asset)
        let named = source.map { assetURL.deletingLastPathComponent().appendingPathComponent($0.outputStem) }
        let stem = (named ?? downloaded ?? assetURL).deletingPathExtension().lastPathComponent
        let naming = try ThumbnailNaming(output: output, stem: stem, format: format, sheets: sheet != nil)
        set.format = naming.format.rawValue
        _ = try set.check()
        let probed = try await Asset.load(assetURL, byteRange: source?.byteRange?.range, limits: limits)
        // The set runs as a queued one runs (its checks, its stall watchdog), writing the files in place.
        let export = ThumbnailSetExport(
            asset: probed, request: set, files: naming, track: vtt.map { URL(fileURLWithPath: $0) })
        export.overwritesExistingFolder = overwrite
        export.stillImageTime = source?.stillImageTime
        export.stallTimeout = stallTimeout
        let json = json
        export.writtenHandler = { written in Self.print(written, json: json) }
        // Ctrl-C, SIGTERM and SIGHUP (the terminal closed) stop it as they stop `reel export`: no picture
        // after the one being made, every file written whole (AtomicFile), no temporary left, exit 130.
        let interrupts = CLI.onTerminationSignals { export.cancel() }
        defer { interrupts.forEach { $0.cancel() } }
        _ = try await export.run(limits: limits)
    }

    /// The lines of a file written: one per picture (`--json`: one per picture on a sheet too), one
    /// per sheet, and the track's.
    private static func print(_ written: ThumbnailSetExport.Written, json: Bool) {
        switch written {
        case .picture(let image):
            if json {
                CLI.printLine(CLI.jsonLine(Line(image)))
            } else {
                CLI.printLine(
                    String(
                        format: "wrote %@ (%dx%d, asked %.3f s, frame at %.3f s%@)", image.file, image.width,
                        image.height, image.requestedTime, image.actualTime, image.keyframe ? ", keyframe" : ""))
            }
        case .sheet(let file, let width, let height, let pictures):
            if json {
                for picture in pictures { CLI.printLine(CLI.jsonLine(Line(picture))) }
            } else {
                CLI.printLine("wrote \(file) (\(width)x\(height), \(pictures.count) images)")
            }
        case .track(let file):
            CLI.printLine(json ? CLI.jsonLine(TrackLine(track: file)) : "wrote \(file)")
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
            let naming = try ThumbnailNaming(
                output: output, stem: (named ?? URL(fileURLWithPath: path)).deletingPathExtension().lastPathComponent,
                format: format, sheets: false)
            let file = naming.file(number: 1)
            try ThumbnailNaming.checkFree([file], overwrite: overwrite)
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

    /// `--submit`: the same options as a `ThumbnailSetRequest`, checked and queued as `reel submit`
    /// queues an export (the asset probed, the folder free), and the job printed as it prints one.
    private func queue(_ source: LibrarySource?) async throws {
        var request = JobRequest(
            asset: asset, export: ExportRequest(output: output, overwrite: overwrite ? true : nil), priority: priority,
            key: key, maxAttempts: maxAttempts)
        request.thumbnails = setRequest
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
}

extension ThumbnailCommand.Line {
    init(_ picture: ThumbnailSetExport.Result.Picture) {
        self.init(
            requestedTime: picture.requestedTime, actualTime: picture.actualTime, keyframe: picture.keyframe,
            file: picture.file, width: picture.width, height: picture.height, x: picture.x, y: picture.y)
    }
}
