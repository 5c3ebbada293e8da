import Foundation
import ReelBoxes
public import ReelMedia
import ReelSystem
import Synchronization

/// Exports an asset with a preset into a new, network-optimised file: the Linux cousin of
/// `AVAssetExportSession`.
///
/// Configure the properties, then call `export()` once. The work runs on a dedicated thread, never on
/// Swift's cooperative pool. The output appears at `outputURL` only when complete: it is written as a
/// hidden temporary file in the same folder (`TemporaryOutput`) and renamed into place; a failed or
/// cancelled export leaves nothing behind. Thread-safe: every property may be read from any thread
/// while exporting.
public final class ExportSession: Sendable {
    /// Where an export stands (`AVAssetExportSession.Status`).
    public enum Status: String, Sendable, Codable {
        case unknown, waiting, exporting, completed, failed, cancelled

        /// Completed, failed or cancelled: nothing changes any more.
        var isFinal: Bool { self == .completed || self == .failed || self == .cancelled }
    }

    /// What a running export is doing: `transcoding` (reading, decoding, encoding, writing), then
    /// `finalizing` (the trailer and, with faststart, the index moved in front). Stored and printed as
    /// its raw string wherever a phase is shown (JSON lines, status files, the database).
    public typealias Phase = TranscodeProgress.Phase

    /// One progress report.
    public struct Progress: Sendable, Equatable {
        public var status: Status
        public var phase: Phase
        /// 0…1 over the whole export, including the final faststart rewrite.
        public var fraction: Double
        /// Frames encoded (or packets copied) so far.
        public var frames: Int
        /// Encoding speed in frames per second, averaged since the start.
        public var framesPerSecond: Double
        /// Estimated seconds until done, once it can be estimated.
        public var secondsRemaining: Double?
        /// Seconds since the export started.
        public var elapsedSeconds: Double
        /// A ladder export's renditions, each on its own (`RenditionProgress`); empty for other exports.
        public var renditions: [RenditionProgress] = []
    }

    struct State {
        var outputURL: URL?
        var outputFileType: OutputType?
        var shouldOptimizeForNetworkUse = true
        var timeRange: TimeRange?
        var metadataPolicy = MetadataPolicy.keep
        var metadataOverrides: [String: String] = [:]
        var overwrite = false
        var writesPoster = false
        var posterTime: Double?
        var ladder: Ladder?
        var ladderResult: LadderResult?
        var stallTimeout: TimeInterval = 120
        var forceTranscode = false
        var fileLengthLimit: Int64?
        var qualityTarget: QualityTarget?
        var usesPresetTarget = true
        /// The last encode's measured quality (`TranscodeOutcome.quality`).
        var measuredQuality: QualityScore?
        var backgroundColor = RGBColor.black
        var allowsAudioOnly = false
        var codecThreads = 0
        var temporaryTag: String?
        var publishGate: (@Sendable () throws(ExportError) -> Void)?
        var outputFault: OutputFault?
        var status = Status.unknown
        var progress = Progress(
            status: .unknown, phase: .transcoding, fraction: 0, frames: 0, framesPerSecond: 0, elapsedSeconds: 0)
        var error: ExportError?
        var result: Result?
        var started = false
        var observers: [Int: AsyncStream<Progress>.Continuation] = [:]
        var handler: (@Sendable (Progress) -> Void)?
        var nextObserver = 0
        var lastPublished: ContinuousClock.Instant?
        /// The sample encode `measuredPlan()` is running, cancelled with this session.
        var sample: ExportSession?
    }

    /// The asset being exported.
    public let asset: Asset
    /// The preset, resolved from the name given.
    public let preset: Preset
    let limits: InputLimits
    let cancelFlag = CancellationFlag()
    let state = Mutex(State())

    /// Creates a session for an asset and a preset name (case-insensitive; Apple's
    /// `AVAssetExportPreset` prefix and short aliases accepted). Throws `unknown-preset`.
    public init(
        asset: Asset, presetName: String, presets: PresetLibrary = .shipped, limits: InputLimits = .standard
    ) throws(ExportError) {
        self.asset = asset
        self.preset = try presets.preset(named: presetName)
        self.limits = limits
    }

    /// A session for a preset already resolved (a sample encode of `measuredPlan()`).
    init(asset: Asset, preset: Preset, limits: InputLimits) {
        self.asset = asset
        self.preset = preset
        self.limits = limits
    }

    /// Where to write the file. Required before `export()`.
    public var outputURL: URL? {
        get { state.withLock { $0.outputURL } }
        set { state.withLock { $0.outputURL = newValue } }
    }
    /// The file type; default `mp4` (`m4a` for audio presets).
    public var outputFileType: OutputType? {
        get { state.withLock { $0.outputFileType } }
        set { state.withLock { $0.outputFileType = newValue } }
    }
    /// Moov atom first so the file plays while it downloads. Default true.
    public var shouldOptimizeForNetworkUse: Bool {
        get { state.withLock { $0.shouldOptimizeForNetworkUse } }
        set { state.withLock { $0.shouldOptimizeForNetworkUse = newValue } }
    }
    /// Part of the asset to export; nil for all of it.
    public var timeRange: TimeRange? {
        get { state.withLock { $0.timeRange } }
        set { state.withLock { $0.timeRange = newValue } }
    }
    /// Which source metadata to keep. Default `.keep`.
    public var metadataPolicy: MetadataPolicy {
        get { state.withLock { $0.metadataPolicy } }
        set { state.withLock { $0.metadataPolicy = newValue } }
    }
    /// Container metadata written over the source's (`AVAssetExportSession.metadata`): a key here
    /// replaces the source's value, an empty value removes the key. The metadata policy still
    /// applies (`sharing` drops location, device and identifier keys, `strip` everything), except
    /// that an identifier set here by name (a content identifier kept for a save-back) survives
    /// `sharing`. Default none.
    public var metadataOverrides: [String: String] {
        get { state.withLock { $0.metadataOverrides } }
        set { state.withLock { $0.metadataOverrides = newValue } }
    }
    /// Also write a poster beside the video: `outputURL` with its extension replaced by `jpg`, the
    /// video's frame at 10 % of the export (the first frame at or after it, past any fade-in from
    /// black at the start), taken from the export's own decode as the frame goes to the encoder.
    /// Exports whose frames cannot be taken as they are (streams copied, 10-bit HDR kept, non-square
    /// pixels) take the same moment from the source with `ThumbnailReader` instead, tone-mapped and
    /// upright as a thumbnail is. The poster is published in the same step as the video: renamed
    /// into place just before it, and removed again if the video cannot be; an export that fails
    /// leaves neither. An export without video writes none. Default false.
    public var writesPoster: Bool {
        get { state.withLock { $0.writesPoster } }
        set { state.withLock { $0.writesPoster = newValue } }
    }
    /// Seconds into the asset at which the poster is taken instead of 10 % of the export: a library
    /// Live or Motion Photo's still's moment (`LibrarySource.stillImageTime`), so the poster is the
    /// picture the photo shows. Ignored when it falls outside the exported time range. Default nil.
    public var posterTime: Double? {
        get { state.withLock { $0.posterTime } }
        set { state.withLock { $0.posterTime = newValue } }
    }
    /// Write an adaptive-streaming ladder instead of one file: `outputURL` names a folder that
    /// appears complete or not at all, holding CMAF segments of every rung and of one AAC rendition,
    /// and HLS playlists written from what was measured (`LadderPlaylists`). Default nil.
    public var ladder: Ladder? {
        get { state.withLock { $0.ladder } }
        set { state.withLock { $0.ladder = newValue } }
    }
    /// What a completed ladder export wrote (nil for other exports).
    public internal(set) var ladderResult: LadderResult? {
        get { state.withLock { $0.ladderResult } }
        set { state.withLock { $0.ladderResult = newValue } }
    }
    /// Replace an existing file at `outputURL` (default false: an existing file is an error).
    public var overwritesExistingFile: Bool {
        get { state.withLock { $0.overwrite } }
        set { state.withLock { $0.overwrite = newValue } }
    }
    /// Called on the export's thread with the same reports as `progressUpdates` (for callers that
    /// own a thread and want no async machinery). Keep it quick: the export waits for it.
    public var progressHandler: (@Sendable (Progress) -> Void)? {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }
    /// Re-encode even when the source already satisfies the preset (no smart passthrough). Default false.
    public var forceTranscode: Bool {
        get { state.withLock { $0.forceTranscode } }
        set { state.withLock { $0.forceTranscode = newValue } }
    }
    /// The largest file the export may write, in bytes (`fileLengthLimit`); nil for no limit. The
    /// whole duration is kept: the rate (and if need be the picture size) is chosen to fit
    /// (`SizeLimit`), the size is checked after the export, and a file still over the limit is
    /// re-encoded once at a corrected rate. A limit that cannot be met at a watchable quality fails
    /// before any work (`limit-exceeded`, saying the smallest feasible size).
    public var fileLengthLimit: Int64? {
        get { state.withLock { $0.fileLengthLimit } }
        set { state.withLock { $0.fileLengthLimit = newValue.map { max(1, $0) } } }
    }
    /// The colour transparent pixels of an animated GIF or APNG are flattened onto. Default black.
    public var backgroundColor: RGBColor {
        get { state.withLock { $0.backgroundColor } }
        set { state.withLock { $0.backgroundColor = newValue } }
    }
    /// Under a video preset, export an asset that has no video as its audio alone. Default false: such
    /// an asset fails `no-video`, since a caller that asked for video rarely wants an audio file.
    public var allowsAudioOnly: Bool {
        get { state.withLock { $0.allowsAudioOnly } }
        set { state.withLock { $0.allowsAudioOnly = newValue } }
    }
    /// Sets every property an `ExportRequest` decides (`ExportRequest.resolve`): output type, time
    /// range, metadata (`metadataDefault` when the request did not choose), network optimisation,
    /// forced transcode, audio-only output, size limit, background and overwrite. The preset is the
    /// session's own, given at `init`.
    public func apply(_ settings: ExportSettings, metadataDefault: MetadataPolicy = .keep) {
        state.withLock { state in
            state.outputFileType = settings.outputType
            state.timeRange = settings.timeRange
            state.metadataPolicy = settings.metadata ?? metadataDefault
            state.shouldOptimizeForNetworkUse = settings.optimizeForNetwork
            state.forceTranscode = settings.forceTranscode
            state.allowsAudioOnly = settings.allowsAudioOnly
            state.fileLengthLimit = settings.fileLengthLimit.map { max(1, $0) }
            state.backgroundColor = settings.background
            state.overwrite = settings.overwrite
            state.writesPoster = settings.poster
            state.ladder = settings.ladder
            state.qualityTarget = settings.quality
            state.usesPresetTarget = settings.presetTarget
        }
    }
    /// A picture quality the video must keep: the export encodes samples at a few CRFs, measures
    /// them against the source as it is scaled (`QualitySearch`), and encodes once at the CRF that
    /// meets the target with the fewest bits (never below the floor, always under the preset's
    /// bit-rate cap); the result measures the whole output (`Result.quality`). Nil (the default):
    /// the preset's `target` if it has one (and `usesPresetTarget`), else its CRF. Not with a size
    /// limit. With a ladder, each rung's CRF is searched (per title).
    public var qualityTarget: QualityTarget? {
        get { state.withLock { $0.qualityTarget } }
        set { state.withLock { $0.qualityTarget = newValue } }
    }
    /// Whether a preset's own `target` (the AV1 presets carry one) applies when `qualityTarget` is
    /// nil. False encodes at the preset's CRF, as `--quality none` does. Default true.
    public var usesPresetTarget: Bool {
        get { state.withLock { $0.usesPresetTarget } }
        set { state.withLock { $0.usesPresetTarget = newValue } }
    }
    /// The target this export aims at: `qualityTarget`, else the preset's when it applies.
    var effectiveQualityTarget: QualityTarget? {
        state.withLock { $0.qualityTarget ?? ($0.usesPresetTarget ? preset.video?.target : nil) }
    }
    /// Threads the video decoder and encoder may each use; 0 (the default) lets them use every core.
    /// A worker running one job per core sets 1: two single-threaded jobs side by side waste less
    /// than two frame-threaded ones contending for the same cores.
    public var codecThreads: Int {
        get { state.withLock { $0.codecThreads } }
        set { state.withLock { $0.codecThreads = max(0, newValue) } }
    }
    /// Names this attempt's temporary file (`TemporaryOutput.url(for:tag:)`): a queue passes
    /// `<job id>-<attempt>` so it can tell attempts apart; nil (the default) picks a random tag.
    public var temporaryTag: String? {
        get { state.withLock { $0.temporaryTag } }
        set { state.withLock { $0.temporaryTag = newValue } }
    }
    /// Called on the export's thread once the file is complete, right before it is moved into
    /// place. Throwing aborts the export with that error and removes the file: a queue that lost its
    /// lease on the job, for instance, must not publish.
    public var publishGate: (@Sendable () throws(ExportError) -> Void)? {
        get { state.withLock { $0.publishGate } }
        set { state.withLock { $0.publishGate = newValue } }
    }
    /// Seconds without any sign of life (a packet read, bytes written) before the export is stopped
    /// and fails as `stalled`. Default 120.
    public var stallTimeout: TimeInterval {
        get { state.withLock { $0.stallTimeout } }
        set { state.withLock { $0.stallTimeout = max(0.05, newValue) } }
    }
    /// Damage to do to the file before verifying it, or an overshoot to force a size limit's second
    /// pass (debug builds only). Defaults to the fault set with `injectOutputFault(named:)`.
    var outputFault: OutputFault? {
        get { state.withLock { $0.outputFault } }
        set { state.withLock { $0.outputFault = newValue } }
    }
    /// Where the export stands.
    public var status: Status { state.withLock { $0.status } }
    /// 0…1.
    public var progress: Double { state.withLock { $0.progress.fraction } }
    /// The latest full progress report.
    public var currentProgress: Progress { state.withLock { $0.progress } }
    /// Why the export failed or was cancelled.
    public var error: ExportError? { state.withLock { $0.error } }
    /// What a completed export produced.
    public var result: Result? { state.withLock { $0.result } }

    /// Progress reports as they happen (at most ~10 a second, plus every status change); the
    /// sequence ends when the export completes, fails or is cancelled. Each access makes a new sequence.
    public var progressUpdates: AsyncStream<Progress> {
        let (stream, continuation) = AsyncStream.makeStream(of: Progress.self, bufferingPolicy: .bufferingNewest(64))
        let finished: Progress? = state.withLock { state in
            if state.status.isFinal { return state.progress }
            let id = state.nextObserver
            state.nextObserver += 1
            state.observers[id] = continuation
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
            }
            return nil
        }
        if let finished {
            continuation.yield(finished)
            continuation.finish()
        }
        return stream
    }

    /// Decides, without doing any work, whether this preset can export this asset to the chosen
    /// output type (`determineCompatibility`), and returns the plan: method, sizes, rates, what
    /// becomes of each stream and the estimated size. Throws the reason when it cannot.
    @discardableResult
    public func determineCompatibility() throws(ExportError) -> ExportPlan {
        try plan(forcingTranscode: false)
    }

    /// `determineCompatibility()`, re-encoding whatever `forceTranscode` says when `forcingTranscode`
    /// is false, and always when it is true (a quality search weighing a copy against a re-encode).
    func plan(forcingTranscode: Bool) throws(ExportError) -> ExportPlan {
        var (type, range, metadata, network, force, destination, limit, background, audioOnly) = state.withLock {
            (
                $0.outputFileType ?? ExportPlanner.defaultType(for: preset), $0.timeRange, $0.metadataPolicy,
                $0.shouldOptimizeForNetworkUse, $0.forceTranscode, $0.outputURL, $0.fileLengthLimit,
                $0.backgroundColor, $0.allowsAudioOnly
            )
        }
        force = force || forcingTranscode
        let (overrides, chosen) = state.withLock { ($0.metadataOverrides, $0.qualityTarget) }
        // A preset's own target gives way to a size limit (below); one the caller chose cannot.
        if chosen != nil, limit != nil { throw QualityPlan.withSizeLimit }
        let quality = effectiveQualityTarget
        var plan = try ExportPlanner.decide(
            asset: asset, preset: preset, type: type, timeRange: range, metadata: metadata,
            optimizeForNetwork: network, forceTranscode: force, fileLengthLimit: limit,
            background: background, allowAudioOnly: audioOnly)
        plan.output.path = destination?.standardizedFileURL.path
        // A size limit chooses the rate itself: a preset's target gives way to it.
        if limit == nil { plan.aim(at: quality, preset: preset) }
        if !overrides.isEmpty {
            let merged = asset.metadata.merging(overrides) { _, new in new }.filter { !$0.value.isEmpty }
            var written = ExportPlanner.metadataToWrite(merged, policy: metadata)
            if metadata == .forSharing {
                // An identifier the caller writes by name (`--keep-content-identifier`: a saved copy
                // that must pair with its still) was asked for; `sharing` drops the source's own.
                for (key, value) in overrides where !value.isEmpty && MetadataPolicy.isIdentifierKey(key) {
                    written[key] = value
                }
            }
            plan.metadata = ExportPlan.Metadata(policy: metadata, written: written)
        }
        return plan
    }

    /// The size the output is expected to have, in bytes (`estimateOutputFileLength`): the plan's
    /// `estimatedBytes`. Throws what `determineCompatibility()` throws.
    public func estimateOutputFileLength() throws(ExportError) -> Int64 {
        try determineCompatibility().estimatedBytes
    }

    /// Asks a running export to stop; it ends `cancelled` within a packet and leaves no file.
    /// Cancelling before `export()` makes it end cancelled at once.
    public func cancelExport() {
        cancelFlag.raise()
        state.withLock { $0.sample }?.cancelExport()
    }

    /// Runs the export on a dedicated thread and returns when it is done. Cancelling the calling task
    /// cancels the export. Throws `ExportError`; `status` and `error` say the same.
    public func export() async throws(ExportError) {
        let outcome: Swift.Result<Void, ExportError> = await withTaskCancellationHandler {
            await onOwnThread(named: "reel-export", stackSize: 4 << 20) { [self] in
                Swift.Result { () throws(ExportError) in try exportBlocking() }
            }
        } onCancel: {
            cancelExport()
        }
        try outcome.get()
    }

    /// Runs the export on the calling thread, blocking it (for callers that own a thread, such as
    /// queue workers). Same guarantees as `export()`.
    public func exportBlocking() throws(ExportError) {
        let begin = state.withLock { state -> Bool in
            if state.started { return false }
            state.started = true
            return true
        }
        guard begin else { throw ExportError(.invalidArgument, "export() was already called on this session") }
        // Elapsed time, fps and the watchdog use the monotonic clock: a wall-clock step (NTP, a
        // person setting the date) neither stretches nor shrinks them.
        let started = ContinuousClock.now
        do throws(ExportError) {
            let result = try run(started: started)
            finish(status: .completed, error: nil, result: result, started: started)
        } catch {
            finish(status: error.code == .cancelled ? .cancelled : .failed, error: error, result: nil, started: started)
            throw error
        }
    }

    private func run(started: ContinuousClock.Instant) throws(ExportError) -> Result {
        if cancelFlag.isRaised { throw ExportSession.cancelled() }
        guard let destination = outputURL?.standardizedFileURL else {
            throw ExportError(.invalidArgument, "no output URL was set")
        }
        if let ladder = state.withLock({ $0.ladder }) {
            return try runLadder(ladder, destination: destination, started: started)
        }
        let planned = try determineCompatibility()
        let (overwrite, tag, gate, writesPoster) = state.withLock {
            ($0.overwrite, $0.temporaryTag, $0.publishGate, $0.writesPoster)
        }
        let attempt = tag ?? TemporaryOutput.randomTag()
        let output = try OutputPublisher(destination: destination, asset: asset.url, tag: attempt, overwrite: overwrite)
        let poster =
            try writesPoster && planned.video != nil
            ? PosterOutput(video: destination, asset: asset.url, tag: attempt, overwrite: overwrite) : nil
        setStatus(.exporting)
        defer {
            output.discard()
            poster?.publisher.discard()
        }
        // What an export that crashed here left behind (an FFmpeg assertion, a kill): never a live one's.
        TemporaryOutput.removeLeftovers(for: destination)
        do throws(ExportError) {
            // A quality target's search, once the output is known to be writable.
            let exportPlan = try searchedQuality(planned, started: started)
            return try run(
                exportPlan, into: output, poster: poster, destination: destination, gate: gate, started: started)
        } catch {
            // The temporary file is the export's business: errors name the file the caller named.
            throw output.naming(error)
        }
    }

    /// Produces the file into `output`'s temporary name (twice when a size limit was missed), lets
    /// `gate` stop it, publishes it and reads it back.
    private func run(
        _ plan: ExportPlan, into output: OutputPublisher, poster: PosterOutput?, destination: URL,
        gate: (@Sendable () throws(ExportError) -> Void)?, started: ContinuousClock.Instant
    ) throws(ExportError) -> Result {
        var exportPlan = plan
        #if DEBUG
            if activeFault == .overshoot, var video = exportPlan.video, let rate = video.maxBitrate {
                video.maxBitrate = rate * 4
                video.bufferSize = rate * 4
                exportPlan.video = video
            }
        #endif
        // Holds the temporary file's lock (`OutputLock`) until it is published or discarded.
        var (verificationSeconds, hold, posterBytes, timing) = try produce(
            exportPlan, into: output, poster: poster != nil, started: started)
        var passes = 1
        if let limit = exportPlan.sizeLimit?.bytes, let bytes = ExportSession.fileBytes(output.temporary),
            bytes > limit
        {
            // Over the limit: one more encode at a rate corrected by how far the first one missed.
            guard let corrected = exportPlan.corrected(forBytes: bytes) else {
                throw ExportSession.overLimit(bytes: bytes, limit: limit, passes: 1)
            }
            output.discard()
            exportPlan = corrected
            let again = try produce(exportPlan, into: output, poster: poster != nil, started: started)
            verificationSeconds += again.seconds
            timing = timing + again.timing
            hold = again.lock
            posterBytes = again.poster
            passes = 2
            if let again = ExportSession.fileBytes(output.temporary), again > limit {
                throw ExportSession.overLimit(bytes: again, limit: limit, passes: 2)
            }
        }
        let publishing = ContinuousClock.now
        var posterWritten: Result.Poster?
        if let poster {
            let bytes: [UInt8]
            if let posterBytes { bytes = posterBytes } else { bytes = try takePosterFromSource(exportPlan) }
            try poster.write(bytes)
            let size = PosterOutput.jpegSize(bytes)
            posterWritten = Result.Poster(
                path: poster.publisher.destination.path, bytes: Int64(bytes.count), width: size?.width,
                height: size?.height, seconds: PosterOutput.moment(of: exportPlan, at: posterTime))
        }
        try gate?()
        // Both or neither: the poster goes into place first, and comes out again if the video cannot.
        try poster?.publisher.publish()
        do throws(ExportError) {
            try withExtendedLifetime(hold) { () throws(ExportError) in try output.publish() }
        } catch {
            poster.map { _ = unlink($0.publisher.destination.path) }
            throw error
        }
        do {
            var result = try ExportSession.summarize(destination, started: started)
            result.method = exportPlan.method
            result.decision = exportPlan.decision.summary
            result.verificationSeconds = verificationSeconds
            result.encodingPasses = passes
            result.timeRange = exportPlan.timeRange
            result.requestedTimeRange = exportPlan.requestedTimeRange
            result.poster = posterWritten
            result.quality = measuredQuality(of: exportPlan)
            if exportPlan.method == .transcode, exportPlan.video != nil {
                result.threads = StageThreads(share: codecThreads)
            }
            result.phases = Result.PhaseSeconds(
                probe: timing.open, encode: max(0, timing.pipeline - timing.open - timing.flush),
                flush: timing.flush, verify: verificationSeconds,
                publish: (ContinuousClock.now - publishing) / .seconds(1))
            return result
        } catch {
            unlink(destination.path)
            poster.map { _ = unlink($0.publisher.destination.path) }
            throw error
        }
    }

    /// Runs one encode (or copy) of `plan` into the temporary file, verifies it against what was
    /// written and waits until it is durable (fsynced); returns the seconds the verification took and
    /// the file's lock.
    private func produce(
        _ exportPlan: ExportPlan, into output: OutputPublisher, poster: Bool, started: ContinuousClock.Instant
    ) throws(ExportError) -> (seconds: Double, lock: OutputLock?, poster: [UInt8]?, timing: PipelineTiming) {
        var transcode = exportPlan.transcodePlan(limits: limits)
        transcode.outputPath = output.temporary.path
        transcode.threads = codecThreads
        if poster { transcode.posterSeconds = PosterOutput.moment(of: exportPlan, at: posterTime) }
        transcode.measuresQuality = exportPlan.quality != nil && exportPlan.method == .transcode
        let plan = transcode
        let running = ContinuousClock.now
        let made = try watched { [self, cancelFlag] heartbeat throws(MediaError) in
            try Transcoder.run(plan, cancel: cancelFlag, heartbeat: heartbeat) { [self] update in
                publish(update, started: started)
            }
        }
        let timing = PipelineTiming(
            open: made.openSeconds, pipeline: (ContinuousClock.now - running) / .seconds(1), flush: made.flushSeconds)
        injectFault(into: output.temporary)
        let verifying = ContinuousClock.now
        try OutputVerification.check(output.temporary, plan: exportPlan, asset: asset, written: made.written)
        let seconds = (ContinuousClock.now - verifying) / .seconds(1)
        // A remux's closing fsync ran while the file was verified (from the page cache); the file is
        // published only once it is durable. Under the stall watchdog, as it was inside the pipeline.
        if let sync = made.sync {
            try watched { _ throws(MediaError) in try sync.wait() }
        }
        state.withLock { $0.measuredQuality = made.quality }
        return (seconds, made.lock, made.poster, timing)
    }

    /// One pipeline run's seconds: opening the input, the whole run (opening included), the flush.
    struct PipelineTiming {
        var open: Double
        var pipeline: Double
        var flush: Double

        static func + (a: PipelineTiming, b: PipelineTiming) -> PipelineTiming {
            PipelineTiming(open: a.open + b.open, pipeline: a.pipeline + b.pipeline, flush: a.flush + b.flush)
        }
    }

    /// Runs `work` (a pipeline: an export's encode or copy, a ladder's) on a thread of its own under the
    /// stall watchdog, and turns how it ended into the export's: what it made, or `stalled`,
    /// `cancelled` or its media error.
    func watched<Made: Sendable>(_ work: @escaping @Sendable (Heartbeat) throws(MediaError) -> Made)
        throws(ExportError) -> Made
    {
        let watchdog = Watchdog(timeout: stallTimeout, cancel: cancelFlag)
        let produced = Mutex<Made?>(nil)
        let outcome = watchdog.run { heartbeat throws(MediaError) in
            let made = try work(heartbeat)
            produced.withLock { $0 = made }
        }
        if watchdog.stalled {
            // How far it got tells a stuck decoder (early) from a starved encoder (its flush, late).
            let reached = state.withLock { Int(($0.progress.fraction * 100).rounded(.down)) }
            throw ExportError(
                .stalled,
                "no progress for \(Int(stallTimeout)) s at \(reached) %; the export was stopped"
                    + (outcome == nil ? " (its codec did not return and was abandoned)" : ""))
        }
        switch outcome {
        case .none:
            throw ExportSession.cancelled(detail: "its codec did not return and was abandoned")
        case .failure(let error):
            if cancelFlag.isRaised { throw ExportSession.cancelled() }
            throw ExportError(error)
        case .success:
            break
        }
        if cancelFlag.isRaised { throw ExportSession.cancelled() }
        guard let made = produced.withLock({ $0 }) else {
            throw ExportError(.internal, "the pipeline produced nothing")
        }
        return made
    }

    /// The poster of an export whose frames could not be taken as they were encoded: the same
    /// moment read from the source, exactly, upright and tone-mapped, at the video's size.
    private func takePosterFromSource(_ plan: ExportPlan) throws(ExportError) -> [UInt8] {
        let start = plan.timeRange?.start ?? 0
        var request = ThumbnailRequest(
            inputPath: asset.url.path, policy: limits,
            times: [min(asset.duration, start + PosterOutput.moment(of: plan, at: posterTime))], toleranceBefore: 0,
            toleranceAfter: 0, format: .jpeg, quality: 90)
        request.byteRange = asset.byteRange
        request.threads = codecThreads
        if let width = plan.width, let height = plan.height {
            request.maximumWidth = width
            request.maximumHeight = height
        }
        var bytes: [UInt8]?
        do {
            try ThumbnailReader.read(request, cancel: cancelFlag) { image in bytes = image.data }
        } catch {
            if cancelFlag.isRaised { throw ExportSession.cancelled() }
            throw ExportError(
                error.kind == .internalFailure ? .internal : .outputFailed, "cannot make the poster: \(error.message)")
        }
        guard let bytes else { throw ExportError(.internal, "the poster was not made") }
        return bytes
    }

    private static func fileBytes(_ url: URL) -> Int64? {
        var status = stat()
        return stat(url.path, &status) == 0 ? Int64(status.st_size) : nil
    }

    private static func overLimit(bytes: Int64, limit: Int64, passes: Int) -> ExportError {
        ExportError(
            .limitExceeded,
            "the file came out at \(bytes) bytes, over the limit of \(limit), after \(passes) \(passes == 1 ? "pass" : "passes")",
            retryable: false)
    }

    /// The error of a cancelled export.
    static func cancelled(detail: String? = nil) -> ExportError {
        ExportError(.cancelled, "the export was cancelled" + (detail.map { " (\($0))" } ?? ""))
    }

    func setStatus(_ status: Status) {
        let (snapshot, observers, handler) = state.withLock { state in
            state.status = status
            state.progress.status = status
            return (state.progress, Array(state.observers.values), state.handler)
        }
        for observer in observers { observer.yield(snapshot) }
        handler?(snapshot)
    }

    /// Records a progress report and passes it on (at most every 0.1 s, and on a phase change). A
    /// no-op once the session has finished: a thread the watchdog abandoned may still report.
    func publish(_ update: TranscodeProgress, started: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        let elapsed = (now - started) / .seconds(1)
        let (snapshot, observers, handler):
            (Progress, [AsyncStream<Progress>.Continuation], (@Sendable (Progress) -> Void)?) = state.withLock {
                state in
                if state.status.isFinal { return (state.progress, [], nil) }
                let fps = elapsed > 0 ? Double(update.frames) / elapsed : 0
                let remaining = update.fraction > 0.02 ? elapsed * (1 - update.fraction) / update.fraction : nil
                let phaseChanged = state.progress.phase != update.phase
                state.progress = Progress(
                    status: state.status, phase: update.phase, fraction: update.fraction, frames: update.frames,
                    framesPerSecond: fps, secondsRemaining: remaining, elapsedSeconds: elapsed,
                    renditions: update.renditions.map(RenditionProgress.init))
                guard phaseChanged || state.lastPublished.map({ now - $0 >= .milliseconds(100) }) ?? true else {
                    return (state.progress, [], nil)
                }
                state.lastPublished = now
                return (state.progress, Array(state.observers.values), state.handler)
            }
        for observer in observers { observer.yield(snapshot) }
        handler?(snapshot)
    }

    private func finish(status: Status, error: ExportError?, result: Result?, started: ContinuousClock.Instant) {
        let (snapshot, observers, handler) = state.withLock { state in
            state.status = status
            state.error = error
            state.result = result
            state.progress.status = status
            state.progress.elapsedSeconds = (ContinuousClock.now - started) / .seconds(1)
            if status == .completed {
                state.progress.fraction = 1
                state.progress.secondsRemaining = 0
                for index in state.progress.renditions.indices { state.progress.renditions[index].fraction = 1 }
            }
            let observers = Array(state.observers.values)
            state.observers.removeAll()
            return (state.progress, observers, state.handler)
        }
        handler?(snapshot)
        for observer in observers {
            observer.yield(snapshot)
            observer.finish()
        }
    }
}
