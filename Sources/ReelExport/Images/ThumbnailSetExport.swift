import Foundation
public import ReelMedia
import ReelSystem
import Synchronization

/// Writes a set of thumbnails (`ThumbnailSetRequest`) into a folder that appears complete or not at
/// all: the pictures (or sprite sheets and their WebVTT track) are made by `AssetImageGenerator`, as
/// `reel thumbnail` makes them, into a hidden folder beside the destination (`TemporaryOutput`'s
/// name, locked while it is written, so a later run removes it if this one is killed), then renamed
/// into place. A failure or a cancel removes the folder. What a queue runs for a thumbnail job.
///
/// `reel thumbnail` runs it too, writing files one by one instead (`init(asset:request:files:track:)`):
/// each whole, named by a `ThumbnailNaming`, with the same checks, the same stall watchdog and the same
/// cancel (no picture after the one being made; the pictures written before stay).
public final class ThumbnailSetExport: Sendable {
    /// Where the set goes.
    public enum Destination: Sendable {
        /// A folder that appears complete or not at all, its files named `ThumbnailNaming`'s default way.
        case folder(URL)
        /// Files written one by one, each whole (`AtomicFile`), named by `naming`; with sheets, the
        /// WebVTT track at `track` (default `naming.track`). Existing files are refused unless
        /// `overwritesExistingFolder`.
        case files(ThumbnailNaming, track: URL?)
    }

    /// A file the set has written (a picture, a sheet or the track), as it is written: what
    /// `writtenHandler` is called with. A file is named as `Result.Picture.file` names it.
    public enum Written: Sendable {
        case picture(Result.Picture)
        /// A sprite sheet of `width`×`height` and the pictures in its cells.
        case sheet(file: String, width: Int, height: Int, pictures: [Result.Picture])
        case track(file: String)
    }

    /// What a completed set wrote.
    public struct Result: Sendable, Codable, Equatable {
        /// One picture: its file (a sheet's, for a picture in a cell), times and place.
        public struct Picture: Sendable, Codable, Equatable {
            /// Relative to the folder; for a set written as files, the file's path.
            public var file: String
            public var requestedTime: Double
            /// The presentation time of the frame used.
            public var actualTime: Double
            public var keyframe: Bool
            public var width: Int
            public var height: Int
            /// The picture's cell on its sheet (nil without sheets).
            public var x: Int?
            public var y: Int?
        }
        /// Every picture, in time order.
        public var images: [Picture]
        /// The WebVTT track's name inside the folder (sheets only); for a set written as files, its path.
        public var track: String?
        /// Every file written, relative to the folder, sorted: the folder holds exactly these. For a
        /// set written as files, their paths in the order written.
        public var files: [String]
        /// The files' total size.
        public var bytes: Int64
    }

    private struct State {
        var tag: String?
        var gate: (@Sendable () throws(ExportError) -> Void)?
        var handler: (@Sendable (Double) -> Void)?
        var written: (@Sendable (Written) -> Void)?
        var overwrite = false
        var still: Double?
        var stem: String?
        var cancelled = false
        var stalled = false
        /// The fraction of the pictures made so far.
        var made = 0.0
        var stallTimeout: TimeInterval = 120
        var codecThreads = 0
        var task: Task<Void, Never>?
    }

    public let asset: Asset
    public let request: ThumbnailSetRequest
    /// The folder to publish; for a set written as files, the folder they go in.
    public let destination: URL
    /// Where the set goes.
    public let output: Destination
    private let state = Mutex(State())

    /// A set published as one folder at `destination`.
    public init(asset: Asset, request: ThumbnailSetRequest, destination: URL) {
        self.asset = asset
        self.request = request
        self.destination = destination.standardizedFileURL
        output = .folder(self.destination)
    }

    /// A set written as files named by `naming` (its format is the request's), the WebVTT track of
    /// sheets at `track` (default `naming.track`): what `reel thumbnail` writes.
    public init(asset: Asset, request: ThumbnailSetRequest, files naming: ThumbnailNaming, track: URL? = nil) {
        self.asset = asset
        self.request = request
        destination = naming.folder.standardizedFileURL
        output = .files(naming, track: track)
    }

    /// Names the hidden folder (`TemporaryOutput.url(for:tag:)`); nil picks a random tag.
    public var temporaryTag: String? {
        get { state.withLock { $0.tag } }
        set { state.withLock { $0.tag = newValue } }
    }
    /// Called once the folder is complete, right before it is renamed into place; throwing aborts the
    /// set and removes the folder (a queue that lost its lease).
    public var publishGate: (@Sendable () throws(ExportError) -> Void)? {
        get { state.withLock { $0.gate } }
        set { state.withLock { $0.gate = newValue } }
    }
    /// Called with the fraction of pictures made (0…1) after each.
    public var progressHandler: (@Sendable (Double) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }
    /// Called after each file is written, on the set's task (`reel thumbnail`'s lines).
    public var writtenHandler: (@Sendable (Written) -> Void)? {
        get { state.withLock { $0.written } }
        set { state.withLock { $0.written = newValue } }
    }
    /// Seconds into the asset at which its Live or Motion Photo's still was taken
    /// (`LibrarySource.stillImageTime`): what the time `still` means. Nil: `still` is refused.
    public var stillImageTime: Double? {
        get { state.withLock { $0.still } }
        set { state.withLock { $0.still = newValue } }
    }
    /// The files' name before their number (default: the asset file's name without its extension);
    /// a library asset's is its resource's (`LibrarySource.outputStem`).
    public var fileStem: String? {
        get { state.withLock { $0.stem } }
        set { state.withLock { $0.stem = newValue } }
    }
    /// Seconds the reading may go without reading a packet before the set is stopped as `stalled`
    /// (default 120, as `ExportSession.stallTimeout`): a decoder or a disk that hangs fails the set
    /// instead of holding its worker's slot for ever. Measured on the monotonic clock. A reading that
    /// does not return once stopped is left to its thread, and the set ends at once.
    public var stallTimeout: TimeInterval {
        get { state.withLock { $0.stallTimeout } }
        set { state.withLock { $0.stallTimeout = max(0.05, newValue) } }
    }
    /// Threads the video decoder may use (`AssetImageGenerator.codecThreads`): a worker gives a set
    /// its job's share of the cores; 0 (the default) lets it use every core.
    public var codecThreads: Int {
        get { state.withLock { $0.codecThreads } }
        set { state.withLock { $0.codecThreads = max(0, newValue) } }
    }
    /// Replace an existing folder at the destination, or for a set written as files, existing files
    /// (default false: `output-exists`).
    public var overwritesExistingFolder: Bool {
        get { state.withLock { $0.overwrite } }
        set { state.withLock { $0.overwrite = newValue } }
    }

    /// What a published set's folder holds, read back as a queue adopts it: its files and their
    /// bytes, the WebVTT track when there is one; the pictures' times are not read back (`images` is
    /// empty): only the run that made them knew them. Throws `output-invalid` for what is no folder.
    public static func describe(folder: URL) throws(ExportError) -> Result {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
            throw ExportError(.outputInvalid, "\(folder.path) is not a thumbnail set's folder")
        }
        var bytes: Int64 = 0
        for name in names {
            var status = stat()
            if stat(folder.path + "/" + name, &status) == 0 { bytes += Int64(status.st_size) }
        }
        return Result(
            images: [], track: names.first { $0.hasSuffix("-thumbnails.vtt") }, files: names.sorted(), bytes: bytes)
    }

    /// Stops the set; `run()` ends `cancelled` and leaves nothing.
    public func cancel() {
        let task = state.withLock {
            $0.cancelled = true
            return $0.task
        }
        task?.cancel()
    }

    /// Writes one file of the set into its hidden folder, whole (`AtomicFile`); the folder's names are
    /// synced once, when it is published.
    private static func write(_ data: Data, to url: URL) throws(ExportError) {
        try ExportError.writing { () throws(AtomicFile.Failure) in
            try AtomicFile.write(data, to: url.path, replacing: false, syncFolder: false)
        }
    }

    /// Makes the pictures and publishes the folder (or writes the files). Throws what
    /// `ThumbnailSetRequest.check()` and `AssetImageGenerator` throw (a time outside the asset:
    /// `invalid-argument`), `no-video`, `output-exists`, `stalled`, `cancelled`, or the publish gate's
    /// error.
    public func run(limits: InputLimits = Asset.defaultLimits) async throws(ExportError) -> Result {
        let checked = try request.check()
        guard asset.videoTrack != nil else { throw ExportError(.noVideo, "\(asset.url.path) has no video track") }
        let (tag, overwrite, still, chosenStem, threads) = state.withLock {
            ($0.tag, $0.overwrite, $0.still, $0.stem, $0.codecThreads)
        }
        let times = try checked.times.seconds(duration: asset.duration, still: still)
        let count =
            checked.grid.map { (times.count + $0.columns * $0.rows - 1) / ($0.columns * $0.rows) } ?? times.count
        let stem = chosenStem ?? asset.url.deletingPathExtension().lastPathComponent

        // Where the files go, and how they are written: into a hidden folder (published whole at the
        // end), or one by one into place.
        let targets: Targets
        var lock: OutputLock?
        var finished = false
        switch output {
        case .folder:
            try OutputPublisher.check(destination: destination, asset: asset.url, overwrite: overwrite)
            TemporaryOutput.removeLeftovers(for: destination)
            let folder = TemporaryOutput.url(for: destination, tag: tag ?? TemporaryOutput.randomTag())
            while lock == nil {
                if mkdir(folder.path, 0o755) != 0 {
                    throw ExportError(
                        .outputFailed, "cannot create \(folder.path): \(String(cString: strerror(errno)))")
                }
                lock = OutputLock.lockNewFolder(folder.path)
            }
            let naming = ThumbnailNaming(
                folder: folder, stem: stem, format: checked.format, sheets: checked.grid != nil)
            targets = Targets(
                files: naming.files(count: count), track: checked.grid != nil ? naming.track : nil,
                shown: { $0.lastPathComponent },
                write: { (data, url) throws(ExportError) in try Self.write(data, to: url) })
        case .files(let naming, let track):
            guard naming.format == checked.format else {
                throw ExportError(
                    .invalidArgument,
                    "the file names say \(naming.format.rawValue) but the format is \(checked.format.rawValue)")
            }
            let files = naming.files(count: count)
            let track = checked.grid != nil ? track ?? naming.track : nil
            try ThumbnailNaming.checkFree(files + (track.map { [$0] } ?? []), overwrite: overwrite)
            try naming.makeFolder()
            targets = Targets(
                files: files, track: track, shown: { $0.path },
                write: { (data, url) throws(ExportError) in try AtomicFile.write(data, to: url, overwrite: overwrite) })
        }
        defer {
            switch output {
            case .folder:
                if !finished, let folder = targets.files.first?.deletingLastPathComponent() {
                    try? FileManager.default.removeItem(at: folder)
                }
                withExtendedLifetime(lock) {}
            case .files(let naming, _):
                if !finished { naming.removeFolderIfEmpty() }
            }
        }

        var generator = AssetImageGenerator(asset: asset, limits: limits)
        generator.appliesPreferredTrackTransform = checked.appliesTransform
        generator.format = checked.format
        generator.quality = checked.quality
        generator.codecThreads = threads
        generator.maximumSize = checked.maximumSize
        let tolerances = checked.tolerances(duration: asset.duration)
        generator.requestedTimeToleranceBefore = tolerances.before
        generator.requestedTimeToleranceAfter = tolerances.after
        let heartbeat = Heartbeat()
        generator.heartbeat = heartbeat
        let made = Mutex<Swift.Result<[Result.Picture], ExportError>>(.success([]))
        let handler = progressHandler
        let written = writtenHandler
        let progress: @Sendable (Double) -> Void = { [self] fraction in
            state.withLock { $0.made = fraction }
            handler?(fraction)
        }
        let work = Task { [generator] in
            do throws(ExportError) {
                let pictures = try await Self.write(
                    generator, times: times, grid: checked.grid, to: targets, duration: asset.duration,
                    progress: progress, written: written)
                made.withLock { $0 = .success(pictures) }
            } catch {
                made.withLock { $0 = .failure(error) }
            }
        }
        let cancelledEarly = state.withLock {
            $0.task = work
            return $0.cancelled
        }
        if cancelledEarly { work.cancel() }
        let timeout = stallTimeout
        let watch = Task { await self.watch(heartbeat, timeout: timeout, stopping: work) }
        await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
        watch.cancel()
        state.withLock { $0.task = nil }
        if state.withLock({ $0.stalled }) {
            let count = Int((state.withLock { $0.made } * Double(times.count)).rounded())
            throw ExportError(
                .stalled,
                "no progress for \(Int(timeout)) s after \(count) of \(times.count) pictures; the set was stopped")
        }
        if state.withLock({ $0.cancelled }) || Task.isCancelled {
            throw ExportError(.cancelled, "the thumbnail set was cancelled")
        }
        let pictures = try made.withLock { $0 }.get()
        let track = targets.track.map(targets.shown)

        guard case .folder = output, let folder = targets.files.first?.deletingLastPathComponent() else {
            // Files in place: every one is written whole already.
            finished = true
            let files = targets.files.prefix(count) + (targets.track.map { [$0] } ?? [])
            var bytes: Int64 = 0
            for file in files {
                var status = stat()
                if stat(file.path, &status) == 0 { bytes += Int64(status.st_size) }
            }
            return Result(images: pictures, track: track, files: files.map(targets.shown), bytes: bytes)
        }
        var files: [String] = []
        var bytes: Int64 = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
            var status = stat()
            guard stat(folder.path + "/" + name, &status) == 0 else { continue }
            files.append(name)
            bytes += Int64(status.st_size)
        }
        files.sort()
        // The gate blocks (a queue confirms its lease, a child asks its worker) and the publish
        // fsyncs: both on a thread of their own, as an export session's gate runs on its pipeline's
        // thread. On the cooperative pool two sets at their gates held both of its threads (two
        // cores) while each gate waited for a task that needed one.
        let gate = state.withLock { $0.gate }
        let destination = self.destination
        try await onOwnThread(named: "reel-publish") { () throws(ExportError) in
            try gate?()
            try LadderVerification.publish(folder: folder, to: destination, overwrite: overwrite)
        }
        finished = true
        return Result(images: pictures, track: track, files: files, bytes: bytes)
    }

    /// The files a run writes (pictures or sheets, in order, and the track), how a file is named in
    /// the result, and how one is written.
    private struct Targets: Sendable {
        var files: [URL]
        var track: URL?
        var shown: @Sendable (URL) -> String
        var write: @Sendable (Data, URL) throws(ExportError) -> Void
    }

    /// Cancels `work` as stalled once `heartbeat` has stood still for `timeout` (looked at four times
    /// per timeout, at most every 0.25 s, on the monotonic clock); returns when cancelled.
    private func watch(_ heartbeat: Heartbeat, timeout: TimeInterval, stopping work: Task<Void, Never>) async {
        let tick = Duration.seconds(min(0.25, timeout / 4))
        var last = heartbeat.value
        var changed = ContinuousClock.now
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            if heartbeat.value != last {
                last = heartbeat.value
                changed = now
            } else if now - changed > .seconds(timeout) {
                state.withLock { $0.stalled = true }
                work.cancel()
                return
            }
        }
    }

    /// Writes the pictures (or sheets and the track) to `targets`; returns what went where. Stops
    /// at the first picture after a cancel.
    private static func write(
        _ generator: AssetImageGenerator, times: [Double], grid: (columns: Int, rows: Int)?, to targets: Targets,
        duration: Double, progress: (@Sendable (Double) -> Void)?, written: (@Sendable (Written) -> Void)?
    ) async throws(ExportError) -> [Result.Picture] {
        var pictures: [Result.Picture] = []
        let total = Double(max(1, times.count))
        if let grid, let track = targets.track {
            var cues: [ThumbnailTrack.Cue] = []
            var number = 0
            do {
                for try await sheet in generator.sheets(for: times, columns: grid.columns, rows: grid.rows) {
                    guard !Task.isCancelled, number < targets.files.count else { break }
                    let file = targets.files[number]
                    number += 1
                    try targets.write(Data(sheet.data), file)
                    let shown = targets.shown(file)
                    let reference = ThumbnailNaming.relativePath(of: file, from: track.deletingLastPathComponent())
                    var onSheet: [Result.Picture] = []
                    for pick in sheet.picks {
                        cues.append(
                            ThumbnailTrack.Cue(
                                start: pick.requestedSeconds, sheet: reference, x: pick.x ?? 0, y: pick.y ?? 0,
                                width: sheet.pictureWidth, height: sheet.pictureHeight))
                        onSheet.append(
                            Result.Picture(
                                file: shown, requestedTime: pick.requestedSeconds, actualTime: pick.actualSeconds,
                                keyframe: pick.isKeyframe, width: sheet.pictureWidth, height: sheet.pictureHeight,
                                x: pick.x, y: pick.y))
                    }
                    pictures += onSheet
                    written?(.sheet(file: shown, width: sheet.width, height: sheet.height, pictures: onSheet))
                    progress?(Double(pictures.count) / total)
                }
            } catch let error as ExportError {
                throw error
            } catch {
                throw ExportError(.internal, "cannot make the sprite sheets: \(error)")
            }
            if Task.isCancelled { throw ExportError(.cancelled, "the thumbnail set was cancelled") }
            try targets.write(Data(ThumbnailTrack.webVTT(cues: cues, duration: duration).utf8), track)
            written?(.track(file: targets.shown(track)))
        } else {
            for await result in generator.images(for: times) {
                // Leaving the loop ends the stream, which stops the decoding.
                guard !Task.isCancelled else { break }
                let image = try result.image
                let file = targets.files[pictures.count]
                try targets.write(image.data, file)
                let picture = Result.Picture(
                    file: targets.shown(file), requestedTime: image.requestedTime, actualTime: image.actualTime,
                    keyframe: image.isKeyframe, width: image.width, height: image.height)
                pictures.append(picture)
                written?(.picture(picture))
                progress?(Double(pictures.count) / total)
            }
            if Task.isCancelled { throw ExportError(.cancelled, "the thumbnail set was cancelled") }
            if pictures.count < times.count {
                throw ExportError(.internal, "\(pictures.count) of \(times.count) pictures were made")
            }
        }
        return pictures
    }
}
