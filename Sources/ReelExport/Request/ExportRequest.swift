import Foundation
public import ReelMedia

/// One export as a person or a program asks for it, with the values as written: the options
/// `reel export` and `reel submit` share, and the keys of a manifest line. The names are the same
/// everywhere: the option `--time-range` is the key `timeRange`, `--no-network-optimization` is
/// `noNetworkOptimization`. An option is added here once and every entry point has it.
///
/// `check()` and `resolve(presets:)` are the one validation, with one set of messages: what `reel
/// export` refuses, `reel submit` and a manifest line refuse in the same words.
public struct ExportRequest: Sendable, Codable, Equatable {
    /// Preset name, alias or Apple name (`1280x720`, `720p`, `AVAssetExportPreset1280x720`).
    public var preset: String?
    /// `mp4`, `mov`, `m4v`, `m4a` or an Apple type identifier; default from `output`'s extension, else
    /// the preset's.
    public var type: String?
    /// The output file.
    public var output: String?
    /// Keep `output`'s extension even though it is not the type's (needs `type`).
    public var forceExtension: Bool?
    /// `start-end`, in seconds or `[hh:]mm:ss`; an end past the asset's is clamped to it.
    public var timeRange: String?
    /// `keep`, `sharing` or `strip` (`MetadataPolicy`); nil leaves it to the caller's default.
    public var metadata: String?
    /// Leave the moov atom at the end (no progressive playback).
    public var noNetworkOptimization: Bool?
    /// Re-encode even when the source already satisfies the preset.
    public var forceTranscode: Bool?
    /// Under a video preset, export an asset without video as audio alone instead of refusing it
    /// (`no-video`).
    public var allowAudioOnly: Bool?
    /// The largest file to write: `16MB`, `8MiB`, `500KB` or bytes (`SizeLimit.parseBytes`).
    public var maxSize: String?
    /// A picture quality the video must keep, `ssim:0.985` or `psnr:42` (`QualityTarget`): the CRF
    /// is searched on samples of the export instead of taken from the preset.
    public var quality: String?
    /// What transparent pixels of an animated GIF or APNG become: `#rrggbb`, `black` (default) or `white`.
    public var background: String?
    /// Replace an existing output file.
    public var overwrite: Bool?
    /// For a `library:<id>` asset: the PhotoKit resource type to export (`pairedVideo`, `video`, …);
    /// default the motion of a Live or Motion Photo, else the asset's own resource.
    public var resource: String?
    /// Save the finished output to the library as a new asset (`PHAssetCreationRequest`); the job
    /// completes only once it is there.
    public var saveToLibrary: Bool?
    /// Saving a Live Photo's motion back: keep its content identifier in the new file (needs
    /// `saveToLibrary`); otherwise it is removed, so the copy never pairs with the original's still.
    public var keepContentIdentifier: Bool?
    /// Also write a poster, `<output without its extension>.jpg`, beside the video, from the same
    /// decode, published with it (both or neither).
    public var poster: Bool?
    /// With type `hls`: the rungs of an adaptive-streaming ladder, `1920x1080,1280x720,…` (`Ladder`);
    /// `output` then names the folder written.
    public var ladder: String?
    /// With a ladder: seconds per segment (default 6).
    public var segmentDuration: String?
    /// With a ladder: the manifests over its segments, `hls` (default), `dash` or `hls,dash`.
    public var manifests: String?
    /// With a ladder keeping HDR: write only its HDR rungs, no SDR rungs beside them
    /// (`Ladder.sdrRungs`).
    public var noSdrRungs: Bool?

    public init(
        preset: String? = nil, type: String? = nil, output: String? = nil, forceExtension: Bool? = nil,
        timeRange: String? = nil, metadata: String? = nil, noNetworkOptimization: Bool? = nil,
        forceTranscode: Bool? = nil, allowAudioOnly: Bool? = nil, maxSize: String? = nil, background: String? = nil,
        overwrite: Bool? = nil, resource: String? = nil, saveToLibrary: Bool? = nil,
        keepContentIdentifier: Bool? = nil, poster: Bool? = nil, ladder: String? = nil,
        segmentDuration: String? = nil, manifests: String? = nil, noSdrRungs: Bool? = nil, quality: String? = nil
    ) {
        self.quality = quality
        self.manifests = manifests
        self.noSdrRungs = noSdrRungs
        self.ladder = ladder
        self.segmentDuration = segmentDuration
        self.resource = resource
        self.saveToLibrary = saveToLibrary
        self.keepContentIdentifier = keepContentIdentifier
        self.preset = preset
        self.type = type
        self.output = output
        self.forceExtension = forceExtension
        self.timeRange = timeRange
        self.metadata = metadata
        self.noNetworkOptimization = noNetworkOptimization
        self.forceTranscode = forceTranscode
        self.allowAudioOnly = allowAudioOnly
        self.maxSize = maxSize
        self.background = background
        self.overwrite = overwrite
        self.poster = poster
    }

    /// The keys a request has (a manifest line's export keys): its stored properties' names.
    package static let keys = StrictKeys.propertyNames(of: ExportRequest())

    /// Checks every value that needs no preset library (types, ranges, sizes, colours, the metadata
    /// policy). Throws `invalid-argument` with the message `resolve` would give.
    public func check() throws(ExportError) {
        _ = try parsed()
    }

    /// Checks the request and returns it as settings, the preset looked up in `presets`. Throws
    /// `unknown-preset`, or `invalid-argument` naming the value that cannot be read. The output's
    /// path is not checked here: it depends on where the caller writes (`OutputPublisher.check`).
    public func resolve(presets: PresetLibrary) throws(ExportError) -> ExportSettings {
        var values = try parsed()
        // A ladder preset, named by `preset` or by `ladder`, names its rungs' presets.
        var ladderPreset: Preset?
        if let text = ladder, Ladder.namesPreset(text) {
            let named = try presets.preset(named: text)
            guard named.kind == .ladder else {
                throw ExportError(
                    .invalidArgument,
                    "the ladder '\(text)' is neither WxH sizes (1920x1080,1280x720) nor a ladder preset (\(presets.ladderNames))"
                )
            }
            if preset != nil {
                throw ExportError(
                    .invalidArgument, "the ladder preset \(named.name) names its rungs' presets; name no other preset")
            }
            ladderPreset = named
        }
        guard
            let name = preset
                ?? (ladderPreset != nil || values.ladder != nil || isLadderType ? Ladder.defaultPreset : nil)
        else {
            throw ExportError(.invalidArgument, "no preset was named")
        }
        var chosen = try presets.preset(named: name)
        if chosen.kind == .ladder {
            if ladder != nil {
                throw ExportError(
                    .invalidArgument, "the preset \(chosen.name) is a ladder: it names its rungs, give no --ladder")
            }
            ladderPreset = chosen
        }
        if let ladderPreset {
            if let type, !isLadderType {
                throw ExportError(
                    .invalidArgument, "the preset \(ladderPreset.name) is a ladder: its output type is hls, not \(type)"
                )
            }
            try refuseLadderOptions()
            let made = try Ladder.from(
                preset: ladderPreset, library: presets, segmentDuration: segmentDuration,
                manifests: try effectiveManifests())
            values.ladder = made
            // The largest rung's preset plans the decode, colour and audio.
            chosen = made.rungPresets?.first ?? chosen
        } else if values.ladder == nil && (segmentDuration != nil || manifests != nil || noSdrRungs == true) {
            throw ExportError(.invalidArgument, ExportRequest.ladderOptionsAlone)
        } else if var ladder = values.ladder, chosen.video?.codec == .hevc {
            // Rungs given as sizes under an HEVC preset: SDR rungs beside HDR ones take the settings an
            // H.264 ladder of those sizes would (the default preset's).
            let fallback = try Ladder.sdrFallback(try? presets.preset(named: Ladder.defaultPreset))
            ladder.sdrRungPresets = Array(repeating: fallback, count: ladder.sizes.count)
            values.ladder = ladder
        } else if values.ladder == nil && isLadderType {
            throw ExportError(
                .invalidArgument, "an hls export needs its rungs: --ladder 1920x1080,1280x720 (or \"ladder\")")
        }
        if noSdrRungs == true { values.ladder?.sdrRungs = false }
        // A ladder writes a folder: its rungs are fragmented MP4, and the output names no file type.
        let outputType =
            values.ladder != nil
            ? OutputType.mp4
            : try OutputType.infer(
                explicit: type, outputPath: output, preset: chosen, forceExtension: forceExtension ?? false)
        return ExportSettings(
            preset: chosen, outputType: outputType, timeRange: values.range, metadata: values.metadata,
            optimizeForNetwork: noNetworkOptimization != true, forceTranscode: forceTranscode ?? false,
            allowsAudioOnly: allowAudioOnly ?? false, fileLengthLimit: values.limit, background: values.background,
            overwrite: overwrite ?? false, saveToLibrary: saveToLibrary ?? false,
            keepContentIdentifier: keepContentIdentifier ?? false, poster: poster ?? false, ladder: values.ladder,
            quality: values.quality, presetTarget: values.presetTarget)
    }

    /// Checks `resource` against the asset it goes with: a resource is chosen only for a
    /// `library:<id>` asset. Throws `invalid-argument`.
    public func checkResource(asset: String) throws(ExportError) {
        if let resource, LibraryReference.identifier(in: asset) == nil {
            throw ExportError(
                .invalidArgument,
                "a resource (\(resource)) is chosen only for a library asset (library:<localIdentifier>), not \(asset)")
        }
    }

    /// `type` as written, trimmed and lowercased.
    private var typeWord: String? { type.map { $0.lowercased().trimmingCharacters(in: .whitespaces) } }

    /// Whether `type` asks for a ladder: `hls`, or `dash` (the same ladder with an MPD alone).
    private var isLadderType: Bool { typeWord == "hls" || typeWord == "dash" }

    /// The manifests asked for: `manifests`, else for type `dash` the MPD alone. Type `dash` with
    /// manifests that leave the MPD out is a contradiction (`invalid-argument`).
    private func effectiveManifests() throws(ExportError) -> String? {
        guard typeWord == "dash" else { return manifests }
        guard let manifests else { return Ladder.Manifest.dash.rawValue }
        let words = manifests.lowercased().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard words.contains(Ladder.Manifest.dash.rawValue) else {
            throw ExportError(
                .invalidArgument, "type dash writes an MPD: the manifests '\(manifests)' leave it out; add dash")
        }
        return manifests
    }

    static let ladderOptionsAlone =
        "a ladder, its segment duration, manifests and --no-sdr-rungs go with --type hls or dash (or \"type\": \"hls\") or a ladder preset"

    /// What a ladder does not take yet.
    private func refuseLadderOptions() throws(ExportError) {
        for (what, given) in [
            ("a size limit", maxSize != nil), ("a poster", poster == true),
            ("saving to the library", saveToLibrary == true), ("forcing the extension", forceExtension == true),
        ]
        where given {
            throw ExportError(.invalidArgument, "an hls ladder does not take \(what) yet")
        }
    }

    /// The values as read. A ladder given as sizes is read here; one that names a ladder preset (and a
    /// preset that may be one) is left to `resolve`, which has the presets: `ladder` is then nil.
    private func parsed() throws(ExportError) -> (
        range: TimeRange?, metadata: MetadataPolicy?, limit: Int64?, background: RGBColor, ladder: Ladder?,
        quality: QualityTarget?, presetTarget: Bool
    ) {
        if let type, OutputType(name: type) == nil, !isLadderType {
            throw ExportError(.invalidArgument, "unknown output type '\(type)'; use mp4, mov, m4v, m4a, hls or dash")
        }
        var ladder: Ladder?
        // `--ladder` alone implies type hls.
        if isLadderType || (type == nil && self.ladder != nil) {
            if let text = self.ladder, !Ladder.namesPreset(text) {
                ladder = try Ladder.parse(text, segmentDuration: segmentDuration, manifests: try effectiveManifests())
            } else if self.ladder == nil && preset == nil {
                throw ExportError(
                    .invalidArgument, "an hls export needs its rungs: --ladder 1920x1080,1280x720 (or \"ladder\")")
            }
            try refuseLadderOptions()
        } else if type != nil
            && (self.ladder != nil || segmentDuration != nil || manifests != nil || noSdrRungs == true)
        {
            throw ExportError(.invalidArgument, ExportRequest.ladderOptionsAlone)
        }
        if keepContentIdentifier == true && saveToLibrary != true {
            throw ExportError(
                .invalidArgument,
                "keeping the content identifier is about saving to the library (--save-to-library, or \"saveToLibrary\")"
            )
        }
        if forceExtension == true && type == nil {
            throw ExportError(
                .invalidArgument, "forcing the output's extension needs an explicit type (--type, or \"type\")")
        }
        var range: TimeRange?
        if let timeRange {
            guard let parsed = TimeRange(parsing: timeRange) else {
                throw ExportError(
                    .invalidArgument,
                    "cannot read the time range '\(timeRange)'; write start-end, e.g. 5-12.5 or 00:01:00-00:02:30")
            }
            range = parsed
        }
        let policy = try metadata.map { text throws(ExportError) in try MetadataPolicy.parse(text) }
        var limit: Int64?
        if let maxSize {
            guard let bytes = SizeLimit.parseBytes(maxSize) else {
                throw ExportError(.invalidArgument, "cannot read the size '\(maxSize)'; write e.g. 16MB, 8MiB or 500KB")
            }
            limit = bytes
        }
        var colour = RGBColor.black
        if let background {
            guard let parsed = RGBColor(parsing: background) else {
                throw ExportError(.invalidArgument, RGBColor.unreadable(background))
            }
            colour = parsed
        }
        var target: QualityTarget?
        // `none`: the preset's CRF, without the target a preset may carry.
        let presetTarget = quality?.lowercased() != "none"
        if let quality, presetTarget {
            guard let parsed = QualityTarget(quality) else {
                throw ExportError(
                    .invalidArgument,
                    "cannot read the quality target '\(quality)'; write ssim:0.985 (0.5 to 0.9995), psnr:42 (20 to 70 dB) or none"
                )
            }
            if maxSize != nil { throw QualityPlan.withSizeLimit }
            target = parsed
        }
        return (range, policy, limit, colour, ladder, target, presetTarget)
    }
}

/// An `ExportRequest` checked: what an `ExportSession` is set up with (`ExportSession.apply(_:)`) and
/// what a queued job records.
public struct ExportSettings: Sendable, Equatable {
    public var preset: Preset
    public var outputType: OutputType
    public var timeRange: TimeRange?
    /// Nil when the request did not choose: the caller's default applies (`keep` for `reel export`,
    /// as `AVAssetExportSession`; a worker's `--metadata` for a queued job).
    public var metadata: MetadataPolicy?
    public var optimizeForNetwork: Bool
    public var forceTranscode: Bool
    public var allowsAudioOnly: Bool
    public var fileLengthLimit: Int64?
    public var background: RGBColor
    public var overwrite: Bool
    /// Import the finished output into the library as a new asset. Not a session's business
    /// (`ExportSession.apply(_:metadataDefault:)` leaves it): the caller saves through its
    /// `AssetLibrary` once the export completed, and sets the session's `metadataOverrides` from the
    /// `LibrarySource` (`LibrarySource.metadata(saving:keepContentIdentifier:)`).
    public var saveToLibrary: Bool = false
    /// Keep a Live Photo's content identifier in the saved copy.
    public var keepContentIdentifier: Bool = false
    /// Write `<output>.jpg` beside the video (`ExportSession.writesPoster`).
    public var poster: Bool = false
    /// An HLS ladder instead of one file (`ExportSession.ladder`): `outputType` is then the rungs'
    /// container, and the output a folder.
    public var ladder: Ladder? = nil
    /// A picture quality the video must keep (`--quality ssim:0.985`): its CRF is searched on
    /// samples (`ExportSession.qualityTarget`). Nil: the preset's `target` (unless `presetTarget` is
    /// false), or its CRF.
    public var quality: QualityTarget? = nil
    /// Whether a preset's own `target` applies when `quality` is nil (`--quality none`: false, the
    /// preset's CRF as it is; `ExportSession.usesPresetTarget`).
    public var presetTarget: Bool = true

    public init(
        preset: Preset, outputType: OutputType, timeRange: TimeRange? = nil, metadata: MetadataPolicy? = nil,
        optimizeForNetwork: Bool = true, forceTranscode: Bool = false, allowsAudioOnly: Bool = false,
        fileLengthLimit: Int64? = nil, background: RGBColor = .black, overwrite: Bool = false,
        saveToLibrary: Bool = false, keepContentIdentifier: Bool = false, poster: Bool = false, ladder: Ladder? = nil,
        quality: QualityTarget? = nil, presetTarget: Bool = true
    ) {
        self.quality = quality
        self.presetTarget = presetTarget
        self.preset = preset
        self.outputType = outputType
        self.timeRange = timeRange
        self.metadata = metadata
        self.optimizeForNetwork = optimizeForNetwork
        self.forceTranscode = forceTranscode
        self.allowsAudioOnly = allowsAudioOnly
        self.fileLengthLimit = fileLengthLimit
        self.background = background
        self.overwrite = overwrite
        self.saveToLibrary = saveToLibrary
        self.keepContentIdentifier = keepContentIdentifier
        self.poster = poster
        self.ladder = ladder
    }
}

extension MetadataPolicy {
    /// The policy named `text` (`keep`, `sharing`, `strip`), or `invalid-argument` saying which exist.
    public static func parse(_ text: String) throws(ExportError) -> MetadataPolicy {
        guard let policy = MetadataPolicy(rawValue: text) else {
            throw ExportError(.invalidArgument, "unknown metadata policy '\(text)'; use keep, sharing or strip")
        }
        return policy
    }

    /// The default a service sets once for every export that does not choose: `$REEL_METADATA` in
    /// `environment`, nil when unset or empty. Throws `invalid-argument` for an unknown policy.
    public static func serviceDefault(in environment: [String: String]) throws(ExportError) -> MetadataPolicy? {
        guard let text = environment["REEL_METADATA"], !text.isEmpty else { return nil }
        do {
            return try parse(text)
        } catch {
            throw ExportError(.invalidArgument, "REEL_METADATA: \(error.message)")
        }
    }
}
