import Foundation
import ReelExport
import ReelMedia

/// Where a job is: Apple's export states.
public enum JobState: String, Sendable, Codable, CaseIterable {
    /// Queued: claimable now, or after `notBefore` when a retry is backing off.
    case waiting
    /// A worker is running it.
    case exporting
    /// Its output is in place.
    case completed
    /// It failed for good (a failure retrying cannot help, or its attempts are used up).
    case failed
    /// Someone cancelled it; it left no output.
    case cancelled

    /// Completed, failed and cancelled jobs never change again (unless retried).
    public var isTerminal: Bool { self == .completed || self == .failed || self == .cancelled }
}

/// What to export: written once at submit and never changed.
public struct JobSpec: Sendable, Codable, Equatable {
    /// Absolute path of the asset.
    public var asset: String
    /// Preset name as given (resolved by the worker).
    public var preset: String
    /// The file type to write.
    public var outputType: OutputType
    /// Absolute path of the output file.
    public var output: String
    /// Higher runs first; equal priorities run first-in, first-out.
    public var priority: Int
    /// Idempotency key: submitting the same key again returns the existing job.
    public var key: String?
    /// Part of the asset to export; nil for all of it.
    public var timeRange: TimeRange?
    /// Which source metadata to keep, when `metadataChosen`; otherwise what a worker without a
    /// default of its own writes (`keep`).
    public var metadata: MetadataPolicy
    /// Whether the client chose `metadata`. When it did not, the worker's default applies
    /// (`reel work --metadata`, `$REEL_METADATA`); specs written before the field existed chose.
    public var metadataChosen: Bool = true
    /// Under a video preset, an asset without video is exported as its audio alone
    /// (`ExportSession.allowsAudioOnly`); false in specs written before the field existed.
    public var allowAudioOnly: Bool = false
    /// Also write a poster JPEG beside the output, published with it (`ExportSession.writesPoster`);
    /// false in specs written before the field existed.
    public var poster: Bool = false
    /// Moov first (default true).
    public var optimizeForNetwork: Bool
    /// Attempts before the job is failed for good.
    public var maxAttempts: Int
    /// Re-encode even when the source already satisfies the preset.
    public var forceTranscode: Bool
    /// Replace an existing file at `output` (`ExportSession.overwritesExistingFile`); false in specs
    /// written before the field existed.
    public var overwrite: Bool
    /// The largest file the export may write, in bytes (`ExportSession.fileLengthLimit`); nil for none.
    public var fileLengthLimit: Int64? = nil
    /// What transparent pixels (animated GIF, APNG) are flattened onto (`ExportSession.backgroundColor`);
    /// black in specs written before the field existed.
    public var background: RGBColor = .black
    /// What a `library:<id>` asset resolved to at submit (`asset` is then its file): checked again
    /// when the job runs, so a file that changed or vanished fails the job (`asset-changed`) instead
    /// of exporting something else. Nil for a path.
    public var library: LibrarySource? = nil
    /// Save the output to the library as a new asset before the job completes.
    public var saveToLibrary: Bool = false
    /// Keep a Live Photo's content identifier in the saved copy.
    public var keepContentIdentifier: Bool = false
    /// An adaptive-streaming ladder instead of one file (`ExportSession.ladder`): `output` is then the
    /// folder the worker publishes, `outputType` the rungs' container (`mp4`); nil in specs written
    /// before the field existed.
    public var ladder: Ladder? = nil
    /// A set of thumbnails instead of an export (`ThumbnailSetExport`): `output` is then the folder
    /// the worker publishes, and `preset` reads `thumbnails`; nil in specs written before the field
    /// existed.
    public var thumbnails: ThumbnailSetRequest? = nil
    /// Library photos to cache instead of an export (`PhotoCacheRequest`): `asset` then names the
    /// library, `output` the job's report in the derivative store (`<folder>/jobs/<id>.json`), and
    /// `preset` reads `cache`; nil in specs written before the field existed.
    public var cache: PhotoCacheRequest? = nil
    /// An asset named by URL (`RemoteAsset`): `asset` is then that URL without its query, and the
    /// worker downloads it before the export; nil for a path or a library asset.
    public var remote: RemoteAsset? = nil
    /// Whether the client allowed the download of a remote asset (`--network-access`,
    /// `"networkAccessAllowed"`): PhotoKit's `isNetworkAccessAllowed`. What it may reach is the
    /// worker's policy, which no job can widen.
    public var networkAccessAllowed: Bool = false
    /// A picture quality the video must keep (`ExportSession.qualityTarget`, `--quality`); nil for
    /// the preset's own target or CRF, and in specs written before the field existed.
    public var quality: QualityTarget? = nil
    /// Whether the preset's own target applies when `quality` is nil (`--quality none`: false);
    /// true in specs written before the field existed.
    public var presetTarget: Bool = true
    /// What `submit` could not check for the worker and warned of (an output folder this user cannot
    /// write, which a worker running as another user may): kept with the job, so its status file and
    /// `reel status` say it; empty in specs written before the field existed.
    public var warnings: [String] = []

    public init(
        asset: String, preset: String, outputType: OutputType, output: String, priority: Int = 0, key: String? = nil,
        timeRange: TimeRange? = nil, metadata: MetadataPolicy = .keep, optimizeForNetwork: Bool = true,
        maxAttempts: Int = 3, forceTranscode: Bool = false, overwrite: Bool = false, fileLengthLimit: Int64? = nil,
        background: RGBColor = .black
    ) {
        self.background = background
        self.fileLengthLimit = fileLengthLimit
        self.forceTranscode = forceTranscode
        self.overwrite = overwrite
        self.asset = asset
        self.preset = preset
        self.outputType = outputType
        self.output = output
        self.priority = priority
        self.key = key
        self.timeRange = timeRange
        self.metadata = metadata
        self.optimizeForNetwork = optimizeForNetwork
        self.maxAttempts = maxAttempts
    }
}

extension JobSpec {
    private enum CodingKeys: String, CodingKey {
        case asset, preset, outputType, output, priority, key, timeRange, metadata, optimizeForNetwork, maxAttempts
        case forceTranscode, overwrite, fileLengthLimit, background, metadataChosen, allowAudioOnly
        case library, saveToLibrary, keepContentIdentifier, poster, ladder, thumbnails, cache, warnings
        case remote, networkAccessAllowed, quality, presetTarget
    }

    /// Decodes specs written by older versions too (no `overwrite`, no `fileLengthLimit`, no `background`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        asset = try c.decode(String.self, forKey: .asset)
        preset = try c.decode(String.self, forKey: .preset)
        outputType = try c.decode(OutputType.self, forKey: .outputType)
        output = try c.decode(String.self, forKey: .output)
        priority = try c.decode(Int.self, forKey: .priority)
        key = try c.decodeIfPresent(String.self, forKey: .key)
        timeRange = try c.decodeIfPresent(TimeRange.self, forKey: .timeRange)
        metadata = try c.decode(MetadataPolicy.self, forKey: .metadata)
        optimizeForNetwork = try c.decode(Bool.self, forKey: .optimizeForNetwork)
        maxAttempts = try c.decode(Int.self, forKey: .maxAttempts)
        forceTranscode = try c.decode(Bool.self, forKey: .forceTranscode)
        overwrite = try c.decodeIfPresent(Bool.self, forKey: .overwrite) ?? false
        fileLengthLimit = try c.decodeIfPresent(Int64.self, forKey: .fileLengthLimit)
        background = try c.decodeIfPresent(RGBColor.self, forKey: .background) ?? .black
        metadataChosen = try c.decodeIfPresent(Bool.self, forKey: .metadataChosen) ?? true
        allowAudioOnly = try c.decodeIfPresent(Bool.self, forKey: .allowAudioOnly) ?? false
        library = try c.decodeIfPresent(LibrarySource.self, forKey: .library)
        saveToLibrary = try c.decodeIfPresent(Bool.self, forKey: .saveToLibrary) ?? false
        keepContentIdentifier = try c.decodeIfPresent(Bool.self, forKey: .keepContentIdentifier) ?? false
        poster = try c.decodeIfPresent(Bool.self, forKey: .poster) ?? false
        ladder = try c.decodeIfPresent(Ladder.self, forKey: .ladder)
        thumbnails = try c.decodeIfPresent(ThumbnailSetRequest.self, forKey: .thumbnails)
        cache = try c.decodeIfPresent(PhotoCacheRequest.self, forKey: .cache)
        warnings = try c.decodeIfPresent([String].self, forKey: .warnings) ?? []
        remote = try c.decodeIfPresent(RemoteAsset.self, forKey: .remote)
        networkAccessAllowed = try c.decodeIfPresent(Bool.self, forKey: .networkAccessAllowed) ?? false
        quality = try c.decodeIfPresent(QualityTarget.self, forKey: .quality)
        presetTarget = try c.decodeIfPresent(Bool.self, forKey: .presetTarget) ?? true
    }

    /// The type as status files and listings show it: `hls` for a ladder (whatever its manifests),
    /// `thumbnails` for a thumbnail set, `cache` for a cache job, else the output type's name.
    public var typeName: String {
        ladder != nil
            ? "hls"
            : thumbnails != nil ? JobSpec.thumbnailsName : cache != nil ? JobSpec.cacheName : outputType.rawValue
    }

    /// What a cache job's `preset` and type read.
    public static let cacheName = "cache"

    /// What a thumbnail job's `preset` and type read.
    public static let thumbnailsName = "thumbnails"

    /// Whether the output is a folder published whole (a ladder, a thumbnail set) rather than a file.
    public var writesFolder: Bool { ladder != nil || thumbnails != nil }

    /// The asset as the client named it: `library:<id>` for a library asset, else its path.
    public var requestedAsset: String { library?.reference ?? asset }

    /// Probes the asset to export (off the caller's thread): for a library asset, first checks that
    /// its file is still as it was when the job was submitted (`asset-changed` otherwise, naming the
    /// identifier), then reads its bytes in place (a Motion Photo's embedded video as a byte range).
    /// `limits` are the worker's; they apply as `inputLimits(_:)` says.
    public func loadAsset(limits: InputLimits) async throws(ExportError) -> Asset {
        try library?.checkUnchanged()
        let limits = inputLimits(limits)
        return try await Asset.load(
            URL(fileURLWithPath: asset), byteRange: library?.byteRange?.range, limits: limits)
    }

    /// The worker's input limits as they apply to this job's asset: a remote asset is the worker's own
    /// download (the worker set `asset` to it), so the allowed roots (`--allow-root`, about the paths a
    /// request may name) do not apply to it; the size and duration limits do.
    public func inputLimits(_ worker: InputLimits) -> InputLimits {
        var limits = worker
        if remote != nil { limits.allowedRoots = [] }
        return limits
    }

    /// The metadata policy to export with: the spec's when chosen, else `workerDefault`.
    public func metadata(workerDefault: MetadataPolicy) -> MetadataPolicy {
        metadataChosen ? metadata : workerDefault
    }
}

extension JobSpec {
    /// A spec that exports `settings`: every export setting is stored from the one value, so what
    /// `reel export` does with it a queued job does too (`settings(preset:)` gives it back whole).
    /// `settings.metadata` nil leaves the worker's default to apply (`metadataChosen` false).
    public init(
        settings: ExportSettings, asset: String, output: String, priority: Int = 0, key: String? = nil,
        maxAttempts: Int = JobSpec.defaultAttempts, library: LibrarySource? = nil
    ) {
        self.init(
            asset: asset, preset: settings.preset.name, outputType: settings.outputType, output: output,
            priority: priority, key: key, timeRange: settings.timeRange, metadata: settings.metadata ?? .keep,
            optimizeForNetwork: settings.optimizeForNetwork, maxAttempts: maxAttempts,
            forceTranscode: settings.forceTranscode, overwrite: settings.overwrite,
            fileLengthLimit: settings.fileLengthLimit, background: settings.background)
        metadataChosen = settings.metadata != nil
        allowAudioOnly = settings.allowsAudioOnly
        self.library = library
        saveToLibrary = settings.saveToLibrary
        keepContentIdentifier = settings.keepContentIdentifier
        poster = settings.poster
        ladder = settings.ladder
        quality = settings.quality
        presetTarget = settings.presetTarget
    }

    /// The export settings this spec stores, with `preset` (its `preset` name, resolved by the
    /// worker): the value `init(settings:…)` was given.
    public func settings(preset: Preset) -> ExportSettings {
        ExportSettings(
            preset: preset, outputType: outputType, timeRange: timeRange, metadata: metadataChosen ? metadata : nil,
            optimizeForNetwork: optimizeForNetwork, forceTranscode: forceTranscode, allowsAudioOnly: allowAudioOnly,
            fileLengthLimit: fileLengthLimit, background: background, overwrite: overwrite,
            saveToLibrary: saveToLibrary, keepContentIdentifier: keepContentIdentifier, poster: poster, ladder: ladder,
            quality: quality, presetTarget: presetTarget)
    }
}

extension JobSpec {
    /// The spec as far as a status file without one (an older spool's) tells it.
    public init(_ status: JobStatus) {
        self.init(
            asset: status.asset, preset: status.preset, outputType: OutputType(rawValue: status.outputType) ?? .mp4,
            output: status.output, priority: status.priority, key: status.key, maxAttempts: status.maxAttempts)
    }

    /// What a client asked for, field by field, for telling an idempotent resubmission from a
    /// conflicting one: the names of the fields where `other` differs (`output` compared once `{id}` is
    /// replaced by `id`).
    public func differences(from other: JobSpec, id: String) -> [String] {
        var fields: [String] = []
        if asset != other.asset { fields.append("asset (\(other.asset), not \(asset))") }
        if preset.lowercased() != other.preset.lowercased() { fields.append("preset (\(other.preset), not \(preset))") }
        if outputType != other.outputType {
            fields.append("type (\(other.outputType.rawValue), not \(outputType.rawValue))")
        }
        let mine = output.replacingOccurrences(of: "{id}", with: id)
        let theirs = other.output.replacingOccurrences(of: "{id}", with: id)
        if mine != theirs { fields.append("output (\(theirs), not \(mine))") }
        if timeRange != other.timeRange {
            fields.append(
                "time range (\(other.timeRange?.description ?? "none"), not \(timeRange?.description ?? "none"))")
        }
        if background != other.background { fields.append("background (\(other.background), not \(background))") }
        // The rest of what shapes the file (priority, attempts and overwrite do not).
        if metadata != other.metadata || metadataChosen != other.metadataChosen {
            let describe = { (spec: JobSpec) in spec.metadataChosen ? spec.metadata.rawValue : "the worker's default" }
            fields.append("metadata (\(describe(other)), not \(describe(self)))")
        }
        if poster != other.poster { fields.append("poster (\(other.poster), not \(poster))") }
        if remote != other.remote || networkAccessAllowed != other.networkAccessAllowed {
            fields.append("remote asset (its checksum, size or network access differ)")
        }
        if thumbnails != other.thumbnails { fields.append("thumbnails (the set asked for differs)") }
        if cache != other.cache { fields.append("cache (the photos or tiers asked for differ)") }
        if ladder != other.ladder {
            let describe = { (ladder: Ladder?) in
                ladder.map {
                    $0.sizes.map(\.description).joined(separator: ",") + " every \($0.segmentSeconds) s, "
                        + $0.manifests.map(\.rawValue).joined(separator: ",")
                        + ($0.writesSDRRungs ? "" : ", no SDR rungs")
                } ?? "none"
            }
            fields.append("ladder (\(describe(other.ladder)), not \(describe(ladder)))")
        }
        if allowAudioOnly != other.allowAudioOnly {
            fields.append("allow audio only (\(other.allowAudioOnly), not \(allowAudioOnly))")
        }
        if optimizeForNetwork != other.optimizeForNetwork {
            fields.append("network optimisation (\(other.optimizeForNetwork), not \(optimizeForNetwork))")
        }
        if forceTranscode != other.forceTranscode {
            fields.append("force transcode (\(other.forceTranscode), not \(forceTranscode))")
        }
        if library?.identifier != other.library?.identifier || library?.resource != other.library?.resource {
            fields.append("library asset (\(other.requestedAsset), not \(requestedAsset))")
        }
        if saveToLibrary != other.saveToLibrary || keepContentIdentifier != other.keepContentIdentifier {
            fields.append("save to library (\(other.saveToLibrary), not \(saveToLibrary))")
        }
        if quality != other.quality || presetTarget != other.presetTarget {
            let describe = { (target: QualityTarget?, preset: Bool) in
                target?.description ?? (preset ? "the preset's" : "none")
            }
            fields.append(
                "quality (\(describe(other.quality, other.presetTarget)), not \(describe(quality, presetTarget)))")
        }
        if fileLengthLimit != other.fileLengthLimit {
            let describe = { (limit: Int64?) in limit.map { "\($0) bytes" } ?? "none" }
            fields.append("size limit (\(describe(other.fileLengthLimit)), not \(describe(fileLengthLimit)))")
        }
        return fields
    }
}

/// A job's error as the status file shows it.
public struct JobError: Sendable, Codable, Equatable {
    /// A stable, machine-readable reason: every `ExportError.Code` (an export's own failure), plus the
    /// queue's own (`worker-crashed`). A struct over a growing set of codes, like `ExportError.Code`;
    /// stored and printed as its raw string.
    public struct Code: Hashable, Sendable, Codable, CustomStringConvertible, CaseIterable {
        public let rawValue: String
        /// A code read back from a status file, a database row or an export process's report.
        init(rawValue: String) { self.rawValue = rawValue }
        /// An export's own failure.
        public init(_ code: ExportError.Code) { rawValue = code.rawValue }
        public init(from decoder: any Decoder) throws {
            rawValue = try decoder.singleValueContainer().decode(String.self)
        }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        /// The worker (or its export process) died while running the job.
        public static let workerCrashed = Code(rawValue: "worker-crashed")
        /// Cancelled on request (`reel cancel`, the API's cancel).
        public static let cancelled = Code(ExportError.Code.cancelled)
        /// Stopped making progress.
        public static let stalled = Code(ExportError.Code.stalled)
        /// The output could not be written or published.
        public static let outputFailed = Code(ExportError.Code.outputFailed)
        /// A file is at the output path already.
        public static let outputExists = Code(ExportError.Code.outputExists)
        /// A bug or an unexpected failure.
        public static let `internal` = Code(ExportError.Code.internal)

        /// Every code a job can end with: the export's own, then the queue's.
        public static let allCases = ExportError.Code.allCases.map(Code.init) + [.workerCrashed]
    }

    /// `unreadable-input`, `incompatible-preset`, `worker-crashed`, … (see README).
    public var code: Code
    public var message: String
    /// Whether running it again could succeed.
    public var retryable: Bool

    public init(code: Code, message: String, retryable: Bool) {
        self.code = code
        self.message = message
        self.retryable = retryable
    }

    public init(_ error: ExportError) {
        self.init(code: Code(error.code), message: error.message, retryable: error.isRetryable)
    }

    public init(_ failure: ExportEvent.Failure) {
        self.init(
            code: Code(failure.error.code), message: failure.error.message,
            retryable: failure.error.retryable)
    }

    /// A job whose worker died while running it, once its attempts are used up.
    package static func workerCrashed(attempts: Int) -> JobError {
        JobError(
            code: .workerCrashed,
            message: "the worker running this job died \(attempts) time(s); failed as a poison job", retryable: false)
    }

    /// A job whose worker died while running attempt `attempt`, queued again.
    package static func requeuedAfterCrash(attempt: Int) -> JobError {
        JobError(
            code: .workerCrashed, message: "the worker running attempt \(attempt) died; the job was queued again",
            retryable: true)
    }

    /// A job someone cancelled.
    package static let cancelledOnRequest = JobError(
        code: .cancelled, message: "cancelled on request", retryable: false)
}

/// What a completed job produced: the export's result, every field of it (`ExportSession.Result`),
/// as status files, the database and `reel status --json` carry it. Its fields read as the export's
/// own (`result.bytes`, `result.method`).
@dynamicMemberLookup
public struct JobResult: Sendable, Codable, Equatable {
    /// What the export produced; for an adopted output, what the file holds, read back.
    public var export: ExportSession.Result
    /// No export ran: an earlier attempt of the job published this output and could not record it, and
    /// this attempt adopted it (`PublishReceipt`). Its `method` reads `adopted` in JSON.
    public var adopted: Bool
    /// The local identifier of the asset the output was saved as (`JobSpec.saveToLibrary`), nil when
    /// it was not saved to a library.
    public var savedLocalIdentifier: String?
    /// A ladder job's renditions, playlists, measured bit rates and every file written, relative to
    /// the output folder (`LadderResult.files`: playlists, MPD, init and media segments); nil for
    /// other jobs.
    public var ladder: LadderResult?
    /// A thumbnail job's pictures (requested and actual times, file, cell) and every file written,
    /// relative to the output folder; nil for other jobs.
    public var thumbnails: ThumbnailSetExport.Result?
    /// A cache job's counts and the photos it could not cache, with why; nil for other jobs.
    public var cache: PhotoCacheResult?

    /// `result`, its elapsed time rounded to the millisecond.
    public init(_ result: ExportSession.Result, adopted: Bool = false) {
        export = result
        export.elapsedSeconds = (result.elapsedSeconds * 1000).rounded() / 1000
        self.adopted = adopted
    }

    /// A result with only the file's facts (method `transcode`, no decision): for tools and tests that
    /// record an outcome without exporting.
    public init(
        bytes: Int64, durationSeconds: Double, width: Int?, height: Int?, videoCodec: String?, audioCodec: String?,
        networkOptimized: Bool, elapsedSeconds: Double
    ) {
        self.init(
            ExportSession.Result(
                bytes: bytes, durationSeconds: durationSeconds, width: width, height: height, videoCodec: videoCodec,
                audioCodec: audioCodec, networkOptimized: networkOptimized, elapsedSeconds: elapsedSeconds,
                method: .transcode, decision: ""))
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<ExportSession.Result, Value>) -> Value {
        get { export[keyPath: field] }
        set { export[keyPath: field] = newValue }
    }

    /// How the file was made, as JSON and logs name it: the export's method, or `adopted`.
    public var methodName: String { adopted ? Self.adoptedMethod : export.method.rawValue }

    private static let adoptedMethod = "adopted"

    private enum CodingKeys: String, CodingKey { case method, savedLocalIdentifier, ladder, thumbnails, cache }

    /// The export's keys, every one, and `savedLocalIdentifier` when the output was saved to a
    /// library; status files written before results had a `method` read as `transcode` with no decision.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let method = try container.decodeIfPresent(String.self, forKey: .method)
        export = try ExportSession.Result(from: decoder, methodOtherwise: .transcode)
        adopted = method == Self.adoptedMethod
        savedLocalIdentifier = try container.decodeIfPresent(String.self, forKey: .savedLocalIdentifier)
        ladder = try container.decodeIfPresent(LadderResult.self, forKey: .ladder)
        thumbnails = try container.decodeIfPresent(ThumbnailSetExport.Result.self, forKey: .thumbnails)
        cache = try container.decodeIfPresent(PhotoCacheResult.self, forKey: .cache)
    }

    public func encode(to encoder: any Encoder) throws {
        try export.encode(to: encoder, method: methodName)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(savedLocalIdentifier, forKey: .savedLocalIdentifier)
        try container.encodeIfPresent(ladder, forKey: .ladder)
        try container.encodeIfPresent(thumbnails, forKey: .thumbnails)
        try container.encodeIfPresent(cache, forKey: .cache)
    }
}

/// The status file of one job, `<spool>/status/<id>.json` (schema 1, documented in README).
public struct JobStatus: Sendable, Codable, Equatable {
    /// The file format's version (1).
    public var schema = 1
    /// The job's id (`j` + creation time + random digits: ids sort by creation).
    public var id: String
    /// Where the job is.
    public var state: JobState
    /// 0…1.
    public var progress: Double
    /// `downloading` (a remote asset), then `transcoding` and `finalizing`, while exporting.
    public var phase: ExportSession.Phase?
    /// Encoding speed in frames per second, while exporting.
    public var fps: Double?
    /// Estimated seconds left, while exporting.
    public var etaSeconds: Double?
    /// A ladder job's renditions, each with its own fraction (`ExportSession.RenditionProgress`): set
    /// by the attempt's progress reports, every one 1 once the job completed; nil for other jobs and
    /// before the first report.
    public var renditions: [ExportSession.RenditionProgress]?
    /// A cache job's photos done (made, already cached or failed) of its total: set by the attempt's
    /// progress reports; nil for other jobs and before the first report.
    public var items: JobItems?
    /// The spec's asset, preset (as given), output type and output path.
    public var asset: String
    public var preset: String
    public var outputType: String
    public var output: String
    /// Higher runs first.
    public var priority: Int
    /// The idempotency key it was submitted with.
    public var key: String?
    /// Attempts started so far, and how many it may have.
    public var attempts: Int
    public var maxAttempts: Int
    /// When it was submitted, last changed, last started and ended.
    public var createdAt: Date
    public var updatedAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    /// Not before this time (a retry waiting out its backoff).
    public var notBefore: Date?
    /// The process running it, while exporting.
    public var worker: String?
    /// When its worker last showed it was alive, while exporting: refreshed at least every 5 s, so
    /// a poller may take a job whose heartbeat is older than 15 s as orphaned.
    public var heartbeatAt: Date?
    /// Why it failed or was cancelled (or, while waiting for a retry, why the last attempt failed).
    public var error: JobError?
    /// What it produced, once completed.
    public var result: JobResult?
    /// What was submitted, in full (older spools' status files lack it).
    public var spec: JobSpec?
    /// Only in what `reel status`/`list`/`wait` print (never in status files): true for an exporting
    /// job whose worker is gone (its lock is free or its lease expired) and which no live worker has
    /// picked up yet.
    public var orphaned: Bool?

    /// A new job's status: waiting, no attempt yet.
    public init(id: String, spec: JobSpec, now: Date) {
        self.id = id
        state = .waiting
        progress = 0
        asset = spec.asset
        preset = spec.preset
        outputType = spec.typeName
        output = spec.output
        priority = spec.priority
        key = spec.key
        attempts = 0
        maxAttempts = spec.maxAttempts
        createdAt = now
        updatedAt = now
        self.spec = spec
    }

    /// Always encode every field, nulls included, so pollers see a stable shape.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(schema, forKey: .schema)
        try c.encode(id, forKey: .id)
        try c.encode(state, forKey: .state)
        try c.encode(progress, forKey: .progress)
        try c.encode(phase, forKey: .phase)
        try c.encode(fps, forKey: .fps)
        try c.encode(etaSeconds, forKey: .etaSeconds)
        try c.encode(renditions, forKey: .renditions)
        try c.encodeIfPresent(items, forKey: .items)
        try c.encode(asset, forKey: .asset)
        try c.encode(preset, forKey: .preset)
        try c.encode(outputType, forKey: .outputType)
        try c.encode(output, forKey: .output)
        try c.encode(priority, forKey: .priority)
        try c.encode(key, forKey: .key)
        try c.encode(attempts, forKey: .attempts)
        try c.encode(maxAttempts, forKey: .maxAttempts)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(finishedAt, forKey: .finishedAt)
        try c.encode(notBefore, forKey: .notBefore)
        try c.encode(worker, forKey: .worker)
        try c.encode(heartbeatAt, forKey: .heartbeatAt)
        try c.encode(error, forKey: .error)
        try c.encode(result, forKey: .result)
        try c.encode(spec, forKey: .spec)
        try c.encodeIfPresent(orphaned, forKey: .orphaned)
    }
}

extension JobStatus {
    /// A new job's id, for every store: `j` + microseconds since 1970 (13 hex digits) + 4 random hex
    /// digits, so ids sort by creation time.
    package static func newID(_ now: Date) -> String {
        let microseconds = UInt64(max(0, now.timeIntervalSince1970) * 1_000_000)
        return "j" + String(format: "%013llx", microseconds) + String(format: "%04x", UInt16.random(in: 0...UInt16.max))
    }
}

/// Items done of a job's total (a cache job's photos).
public struct JobItems: Sendable, Codable, Equatable {
    public var done: Int
    public var total: Int
    public init(done: Int, total: Int) {
        self.done = done
        self.total = total
    }
}
