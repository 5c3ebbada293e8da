import Foundation
public import ReelMedia
import ReelSystem
import Synchronization

/// Writes a set of thumbnails (`ThumbnailSetRequest`) into a folder that appears complete or not at
/// all: the pictures (or sprite sheets and their WebVTT track) are made by `AssetImageGenerator`, as
/// `reel thumbnail` makes them, into a hidden folder beside the destination (`TemporaryOutput`'s
/// name, locked while it is written, so a later run removes it if this one is killed), then renamed
/// into place. A failure or a cancel removes the folder. What a queue runs for a thumbnail job.
public final class ThumbnailSetExport: Sendable {
    /// What a completed set wrote.
    public struct Result: Sendable, Codable, Equatable {
        /// One picture: its file (a sheet's, for a picture in a cell), times and place.
        public struct Picture: Sendable, Codable, Equatable {
            /// Relative to the folder.
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
        /// The WebVTT track's name inside the folder (sheets only).
        public var track: String?
        /// Every file written, relative to the folder, sorted: the folder holds exactly these.
        public var files: [String]
        /// The files' total size.
        public var bytes: Int64
    }

    private struct State {
        var tag: String?
        var gate: (@Sendable () throws(ExportError) -> Void)?
        var handler: (@Sendable (Double) -> Void)?
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
    /// The folder to publish.
    public let destination: URL
    private let state = Mutex(State())

    public init(asset: Asset, request: ThumbnailSetRequest, destination: URL) {
        self.asset = asset
        self.request = request
        self.destination = destination.standardizedFileURL
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
    /// Replace an existing folder at the destination (default false: `output-exists`).
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

    /// The files' names for `count` pictures (or sheets) of an asset named `stem`: as `reel thumbnail`
    /// names them in a folder.
    static func names(stem: String, count: Int, sheets: Bool, format: ImageFormat) -> [String] {
        (1...max(1, count)).map { number in
            let text = String(number)
            return stem + (sheets ? "-sprite-" : "-") + String(repeating: "0", count: max(0, 3 - text.count)) + text
                + "." + format.fileExtension
        }
    }

    /// Writes one file of the set into its hidden folder, whole (`AtomicFile`); the folder's names are
    /// synced once, when it is published.
    private static func write(_ data: Data, to url: URL) throws(ExportError) {
        try ExportError.writing { () throws(AtomicFile.Failure) in
            try AtomicFile.write(data, to: url.path, replacing: false, syncFolder: false)
        }
    }

    /// Makes the pictures and publishes the folder. Throws what `ThumbnailSetRequest.check()` and
    /// `AssetImageGenerator` throw (a time outside the asset: `invalid-argument`), `no-video`,
    /// `output-exists`, `cancelled`, or the publish gate's error.
    public func run(limits: InputLimits = Asset.defaultLimits) async throws(ExportError) -> Result {
        let checked = try request.check()
        guard asset.videoTrack != nil else { throw ExportError(.noVideo, "\(asset.url.path) has no video track") }
        let (tag, overwrite, still, chosenStem, threads) = state.withLock {
            ($0.tag, $0.overwrite, $0.still, $0.stem, $0.codecThreads)
        }
        let times = try checked.times.seconds(duration: asset.duration, still: still)
        try OutputPublisher.check(destination: destination, asset: asset.url, overwrite: overwrite)
        TemporaryOutput.removeLeftovers(for: destination)
        let folder = TemporaryOutput.url(for: destination, tag: tag ?? TemporaryOutput.randomTag())
        var lock: OutputLock?
        while lock == nil {
            if mkdir(folder.path, 0o755) != 0 {
                throw ExportError(.outputFailed, "cannot create \(folder.path): \(String(cString: strerror(errno)))")
            }
            lock = OutputLock.lockNewFolder(folder.path)
        }
        var published = false
        defer {
            if !published { try? FileManager.default.removeItem(at: folder) }
            withExtendedLifetime(lock) {}
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
        let stem = chosenStem ?? asset.url.deletingPathExtension().lastPathComponent
        let made = Mutex<Swift.Result<[Result.Picture], ExportError>>(.success([]))
        let handler = progressHandler
        let progress: @Sendable (Double) -> Void = { [self] fraction in
            state.withLock { $0.made = fraction }
            handler?(fraction)
        }
        let work = Task { [generator] in
            do throws(ExportError) {
                let pictures = try await Self.write(
                    generator, times: times, grid: checked.grid, stem: stem, format: checked.format, into: folder,
                    duration: asset.duration, progress: progress)
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
        published = true
        return Result(
            images: pictures, track: checked.grid != nil ? stem + "-thumbnails.vtt" : nil, files: files, bytes: bytes)
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

    /// Writes the pictures (or sheets and the track) into `folder`; returns what went where.
    private static func write(
        _ generator: AssetImageGenerator, times: [Double], grid: (columns: Int, rows: Int)?, stem: String,
        format: ImageFormat, into folder: URL, duration: Double, progress: (@Sendable (Double) -> Void)?
    ) async throws(ExportError) -> [Result.Picture] {
        var pictures: [Result.Picture] = []
        let total = Double(max(1, times.count))
        if let grid {
            let perSheet = grid.columns * grid.rows
            let names = names(
                stem: stem, count: (times.count + perSheet - 1) / perSheet, sheets: true, format: format)
            var cues: [ThumbnailTrack.Cue] = []
            var number = 0
            do {
                for try await sheet in generator.sheets(for: times, columns: grid.columns, rows: grid.rows) {
                    guard number < names.count else { break }
                    let name = names[number]
                    number += 1
                    try Self.write(Data(sheet.data), to: folder.appendingPathComponent(name))
                    for pick in sheet.picks {
                        cues.append(
                            ThumbnailTrack.Cue(
                                start: pick.requestedSeconds, sheet: name, x: pick.x ?? 0, y: pick.y ?? 0,
                                width: sheet.pictureWidth, height: sheet.pictureHeight))
                        pictures.append(
                            Result.Picture(
                                file: name, requestedTime: pick.requestedSeconds, actualTime: pick.actualSeconds,
                                keyframe: pick.isKeyframe, width: sheet.pictureWidth, height: sheet.pictureHeight,
                                x: pick.x, y: pick.y))
                    }
                    progress?(Double(pictures.count) / total)
                }
            } catch let error as ExportError {
                throw error
            } catch {
                throw ExportError(.internal, "cannot make the sprite sheets: \(error)")
            }
            if Task.isCancelled { throw ExportError(.cancelled, "the thumbnail set was cancelled") }
            try Self.write(
                Data(ThumbnailTrack.webVTT(cues: cues, duration: duration).utf8),
                to: folder.appendingPathComponent(stem + "-thumbnails.vtt"))
        } else {
            let names = names(stem: stem, count: times.count, sheets: false, format: format)
            for await result in generator.images(for: times) {
                let image = try result.image
                let name = names[pictures.count]
                try Self.write(image.data, to: folder.appendingPathComponent(name))
                pictures.append(
                    Result.Picture(
                        file: name, requestedTime: image.requestedTime, actualTime: image.actualTime,
                        keyframe: image.isKeyframe, width: image.width, height: image.height))
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
