import Foundation
internal import ReelMedia

/// Which container metadata an export keeps.
public enum MetadataPolicy: String, Sendable, Codable, CaseIterable {
    /// Keep everything (creation time, location, make/model, content identifier, titles).
    case keep
    /// Like `AVMetadataItemFilter.forSharing`: drop location and device items and the identifiers
    /// that tie a file to a library, a device or a person (`MetadataPolicy.isPersonal`), keep the rest.
    case forSharing = "sharing"
    /// Write no source metadata at all.
    case strip
}

/// How an export produces its file.
public enum ExportMethod: String, Sendable, Codable {
    /// Decode and re-encode.
    case transcode
    /// The Passthrough preset: copy streams.
    case passthrough
    /// The source already satisfies the preset, so its streams are copied instead of re-encoded.
    case smartPassthrough = "smart-passthrough"
}

/// Decides how a preset applies to an asset for an output type (`determineCompatibility`).
public enum ExportPlanner {
    /// The output type used when none is given: `m4a` for audio presets, `mp4` otherwise.
    public static func defaultType(for preset: Preset) -> OutputType { preset.kind == .audio ? .m4a : .mp4 }

    /// The swscale interpolation Reel's scaler uses (`Scaler.swift`: `SWS_BICUBIC`, as ffmpeg's
    /// scale filter), stated in plans.
    static let scaler = "bicubic"

    /// The plan of `settings` for `asset` (`decide(asset:preset:type:…)` with each setting);
    /// `metadataDefault` applies when the settings did not choose a metadata policy.
    public static func decide(
        asset: Asset, settings: ExportSettings, metadataDefault: MetadataPolicy = .keep
    ) throws(ExportError) -> ExportPlan {
        var plan = try decide(
            asset: asset, preset: settings.preset, type: settings.outputType, timeRange: settings.timeRange,
            metadata: settings.metadata ?? metadataDefault, optimizeForNetwork: settings.optimizeForNetwork,
            forceTranscode: settings.forceTranscode, fileLengthLimit: settings.fileLengthLimit,
            background: settings.background, allowAudioOnly: settings.allowsAudioOnly)
        // As `ExportSession.determineCompatibility()`: a size limit chooses the rate itself.
        if settings.fileLengthLimit == nil {
            plan.aim(at: settings.quality ?? settings.preset.video?.target, preset: settings.preset)
        }
        return plan
    }

    /// Builds the plan or throws `incompatible-preset` / `invalid-argument` with a clear reason.
    /// Reads only the asset's probed facts (a header-only probe is enough): no file is opened. With
    /// `fileLengthLimit`, the plan fits that many bytes (`SizeLimit`) or throws `limit-exceeded` with
    /// the smallest feasible size. A video preset refuses an asset without video (`no-video`) unless
    /// `allowAudioOnly`. A time range that ends past the asset is clamped to it, as
    /// `AVAssetExportSession` does: the plan's `timeRange` is what is exported, `requestedTimeRange`
    /// what was asked.
    public static func decide(
        asset: Asset, preset: Preset, type: OutputType, timeRange: TimeRange?, metadata: MetadataPolicy,
        optimizeForNetwork: Bool, forceTranscode: Bool = false, fileLengthLimit: Int64? = nil,
        background: RGBColor = .black, allowAudioOnly: Bool = false
    ) throws(ExportError) -> ExportPlan {
        if let limit = fileLengthLimit {
            var plan = try decide(
                asset: asset, preset: preset, type: type, timeRange: timeRange, metadata: metadata,
                optimizeForNetwork: optimizeForNetwork, forceTranscode: forceTranscode, background: background,
                allowAudioOnly: allowAudioOnly)
            if plan.method == .smartPassthrough, plan.estimatedBytes > limit {
                plan = try decide(
                    asset: asset, preset: preset, type: type, timeRange: timeRange, metadata: metadata,
                    optimizeForNetwork: optimizeForNetwork, forceTranscode: true, background: background,
                    allowAudioOnly: allowAudioOnly)
                plan.decision = ExportPlan.Decision(
                    obstacle: .sizeLimit,
                    summary:
                        "re-encoded: the source (\(SizeLimit.describe(Double(asset.fileBytes)))) is over the \(SizeLimit.describe(Double(limit))) limit"
                )
            }
            try fit(&plan, limit: limit, asset: asset, preset: preset)
            plan.estimateMethod = SizeEstimate.method(for: plan)
            return plan
        }
        try check(timeRange, asset: asset)
        var plan = ExportPlan(
            asset: asset.url.path, assetByteRange: asset.byteRange.map(ByteRange.init), preset: preset.name,
            method: .transcode,
            decision: ExportPlan.Decision(obstacle: nil, summary: ""),
            output: ExportPlan.Output(
                path: nil, type: type, muxer: type.container.muxer, brand: type.container.brand,
                networkOptimized: optimizeForNetwork),
            durationSeconds: TimeRange.seconds(of: timeRange, within: asset.duration),
            timeRange: timeRange?.clamped(to: asset.duration),
            streams: asset.tracks.map {
                ExportPlan.Stream(index: $0.index, kind: $0.kind, codec: $0.codec, action: .skip, reason: nil)
            },
            metadata: ExportPlan.Metadata(policy: metadata, written: metadataToWrite(asset.metadata, policy: metadata)),
            estimatedBytes: 0)
        plan.requestedTimeRange = timeRange
        switch preset.kind {
        case .ladder:
            throw ExportError(
                .invalidArgument,
                "the preset \(preset.name) is a ladder: export it as type hls (--preset \(preset.name), ExportSession.ladder)"
            )
        case .passthrough:
            try planPassthrough(&plan, asset: asset, type: type)
        case .audio:
            try planAudio(&plan, asset: asset, preset: preset, type: type)
        case .video:
            try planVideo(
                &plan, asset: asset, preset: preset, type: type, forceTranscode: forceTranscode,
                allowAudioOnly: allowAudioOnly)
        }
        if plan.video?.copied == false, let format = asset.videoTrack?.pixelFormat,
            MediaCapabilities.pixelFormatHasAlpha(format)
        {
            plan.video?.background = background
        }
        // Other video tracks left out say which track was chosen and why (a Motion Photo's stills).
        if let chosen = asset.videoTrack?.index, let choice = asset.videoTrackChoice {
            for position in plan.streams.indices
            where plan.streams[position].kind == .video && plan.streams[position].index != chosen
                && plan.streams[position].action == .skip && plan.streams[position].reason == nil
            {
                plan.streams[position].reason = "not the exported video: \(choice)"
            }
        }
        plan.width = plan.video?.width
        plan.height = plan.video?.height
        plan.frameRate = plan.video?.frameRate
        plan.estimatedBytes = SizeEstimate.bytes(for: plan, asset: asset)
        plan.estimateMethod = SizeEstimate.method(for: plan)
        return plan
    }

    private static func check(_ timeRange: TimeRange?, asset: Asset) throws(ExportError) {
        guard let range = timeRange else { return }
        if let end = range.end, end <= range.start {
            throw ExportError(.invalidArgument, "the time range ends (\(end) s) before it starts (\(range.start) s)")
        }
        if asset.duration > 0, range.start >= asset.duration {
            throw ExportError(
                .invalidArgument,
                "the time range starts at \(range.start) s, after the end of the asset (\(String(format: "%.3f", asset.duration)) s)"
            )
        }
    }

    /// The Passthrough preset: every stream the output type can hold is copied.
    static func planPassthrough(_ plan: inout ExportPlan, asset: Asset, type: OutputType) throws(ExportError) {
        let animated = ["gif": "an animated GIF", "apng": "an animated PNG"]
        if let kind = asset.container.split(separator: ",").lazy.compactMap({ animated[String($0)] }).first {
            throw ExportError(
                .incompatiblePreset,
                "Passthrough cannot copy \(asset.url.lastPathComponent): it is \(kind), which \(type.rawValue) cannot hold; use a video preset (such as 1280x720), which turns it into H.264"
            )
        }
        if type.isAudioOnly, asset.videoTrack != nil {
            throw ExportError(
                .incompatiblePreset,
                "Passthrough cannot write the video of \(asset.url.lastPathComponent) into an m4a file; use --type mp4 or the AppleM4A preset"
            )
        }
        for (position, track) in asset.tracks.enumerated() {
            let wanted: Bool
            switch track.kind {
            case .video: wanted = !type.isAudioOnly && !track.isAttachedPicture
            case .audio: wanted = true
            case .subtitle: wanted = !type.isAudioOnly
            default: wanted = false
            }
            guard wanted else {
                plan.streams[position].reason =
                    track.isAttachedPicture ? "a cover picture" : "\(track.kind.rawValue) streams are not exported"
                continue
            }
            if MediaCapabilities.container(type.container.muxer, canHold: track.codec) {
                plan.streams[position].action = .copy
            } else if track.index == asset.videoTrack?.index || track.index == asset.audioTrack?.index {
                throw ExportError(
                    .incompatiblePreset,
                    "Passthrough cannot put \(track.codec) (\(track.kind.rawValue) track \(track.index)) in a \(type.rawValue) file; choose another output type or a re-encoding preset"
                )
            } else {
                plan.streams[position].reason = "\(type.rawValue) cannot hold \(track.codec)"
            }
        }
        if !plan.streams.contains(where: { $0.action == .copy }) {
            throw ExportError(.incompatiblePreset, "Passthrough found no video or audio track to copy")
        }
        plan.method = .passthrough
        plan.decision = ExportPlan.Decision(obstacle: nil, summary: "the Passthrough preset copies every stream")
        if let range = plan.timeRange {
            if range.start > 0 {
                plan.copiedFromSeconds = try? MediaProbe.keyframeSeconds(
                    atOrBefore: range.start, path: asset.url.path, byteRange: asset.byteRange)
            }
            // Every output type is an MP4/QuickTime file, whose edit lists players honour.
            let end = range.end.map { min($0, asset.duration) } ?? asset.duration
            plan.decision.summary +=
                String(
                    format:
                        " from the keyframe at or before %.3f s, with an edit list that plays %.3f s to %.3f s exactly",
                    range.start, range.start, end)
        }
        let copied = Set(plan.streams.filter { $0.action == .copy }.map(\.index))
        if let track = asset.videoTrack, copied.contains(track.index) {
            plan.video = copiedVideo(track)
        }
        if let track = asset.audioTrack, copied.contains(track.index) {
            plan.audio = copiedAudio(track)
        }
    }

    /// An audio preset: the asset's audio track encoded to AAC, nothing else.
    static func planAudio(_ plan: inout ExportPlan, asset: Asset, preset: Preset, type: OutputType)
        throws(ExportError)
    {
        if type == .m4v {
            throw ExportError(.incompatiblePreset, "\(preset.name) writes audio only; use --type m4a (or mp4/mov)")
        }
        guard let track = asset.audioTrack, let audio = preset.audio else {
            throw ExportError(
                .incompatiblePreset,
                "\(preset.name) needs an audio track and \(asset.url.lastPathComponent) has none")
        }
        plan.audio = encodedAudio(audio, track: track)
        plan.mark(track.index, .transcode)
        plan.decision = ExportPlan.Decision(obstacle: nil, summary: "\(preset.name) encodes the audio track only")
    }

    /// A video preset: the video re-encoded into the preset's box and the audio to AAC, unless the
    /// source already is what the preset would make (smart passthrough).
    static func planVideo(
        _ plan: inout ExportPlan, asset: Asset, preset: Preset, type: OutputType, forceTranscode: Bool,
        allowAudioOnly: Bool = false
    ) throws(ExportError) {
        if type.isAudioOnly {
            throw ExportError(
                .incompatiblePreset, "\(preset.name) writes video, which an m4a file cannot hold; use AppleM4A for m4a"
            )
        }
        guard let settings = preset.video, let audio = preset.audio else {
            throw ExportError(.invalidPreset, "\(preset.name) has no video settings")
        }
        // FFmpeg 5.1's QuickTime muxer refuses AV1 ("only supported in MP4 and AVIF"); MP4 and M4V hold it.
        if settings.codec == .av1, !MediaCapabilities.container(type.container.muxer, canHold: "av1") {
            throw ExportError(
                .incompatiblePreset,
                "\(preset.name) encodes AV1, which a \(type.rawValue) file cannot hold (FFmpeg's QuickTime writer has no AV1); use --type mp4 or m4v"
            )
        }
        if asset.videoTrack == nil && asset.audioTrack == nil {
            throw ExportError(.unreadableInput, "\(asset.url.lastPathComponent) has no video or audio track")
        }
        if asset.videoTrack == nil && !allowAudioOnly {
            throw ExportError(
                .noVideo,
                "\(asset.url.lastPathComponent) has no video, and \(preset.name) makes video; to write its audio alone, allow audio-only output (--allow-audio-only, or \"allowAudioOnly\": true), or use AppleM4A"
            )
        }
        if let track = asset.videoTrack {
            guard let display = track.displaySize, display.width > 0, display.height > 0 else {
                throw ExportError(.unreadableInput, "the video track of \(asset.url.lastPathComponent) has no size")
            }
            let size = preset.outputSize(forDisplayWidth: display.width, height: display.height)
            // x265 refuses pictures under 16 pixels a side ("Image size is too small"); presets never upscale.
            if settings.codec == .hevc, min(size.width, size.height) < 16 {
                throw ExportError(
                    .incompatiblePreset,
                    "\(preset.name) encodes HEVC, which needs a picture at least 16 pixels on each side; this one would be \(size.width)x\(size.height) (use an H.264 preset)"
                )
            }
            // SVT-AV1 1.4 refuses pictures under 64 pixels a side ("Source Height must be at least 64").
            if settings.codec == .av1, min(size.width, size.height) < 64 {
                throw ExportError(
                    .incompatiblePreset,
                    "\(preset.name) encodes AV1, which needs a picture at least 64 pixels on each side; this one would be \(size.width)x\(size.height) (use an H.264 preset)"
                )
            }
            plan.video = encodedVideo(
                settings, track: track, size: size,
                color: try videoColor(settings, track: track, presetName: preset.name))
            plan.mark(track.index, .transcode)
        }
        if let track = asset.audioTrack {
            plan.audio = encodedAudio(audio, track: track)
            plan.mark(track.index, .transcode)
        }
        // Smart passthrough: a source that already is what the preset would make is copied.
        let obstacle: (PassthroughObstacle, String)? =
            forceTranscode
            ? (.forced, PassthroughObstacle.forced.description)
            : smartPassthroughObstacle(asset: asset, preset: preset, type: type, timeRange: plan.timeRange)
        if let (obstacle, reason) = obstacle {
            plan.decision = ExportPlan.Decision(obstacle: obstacle, summary: "re-encoded: \(reason)")
            return
        }
        plan.method = .smartPassthrough
        plan.decision = ExportPlan.Decision(
            obstacle: nil,
            summary: "copied: the source already fits \(preset.name) (codec, size, frame rate, bit rate, audio)")
        plan.video = asset.videoTrack.map(copiedVideo)
        plan.audio = asset.audioTrack.map(copiedAudio)
        for index in [asset.videoTrack?.index, asset.audioTrack?.index].compactMap({ $0 }) {
            plan.mark(index, .copy)
        }
    }

    /// Why the source cannot simply be copied under a video preset, with the reason in words, or nil
    /// when it can: same codec (8-bit 4:2:0 H.264, or HEVC within the preset's depth), inside the box
    /// at its own size, square pixels, no rotation or mirror to apply, frame rate and bit rate within
    /// the caps, no HDR the preset would make SDR, and audio that is already AAC-LC with at most the preset's channels at 44.1/48 kHz.
    static func smartPassthroughObstacle(asset: Asset, preset: Preset, type: OutputType, timeRange: TimeRange?)
        -> (PassthroughObstacle, String)?
    {
        func no(_ obstacle: PassthroughObstacle, _ reason: String? = nil) -> (PassthroughObstacle, String) {
            (obstacle, reason ?? obstacle.description)
        }
        guard let settings = preset.video, let audioSettings = preset.audio else { return no(.notAVideoPreset) }
        guard let video = asset.videoTrack else { return no(.noVideo) }
        if timeRange != nil { return no(.timeRange) }
        let codec = settings.codec.rawValue
        guard video.codec == codec else { return no(.videoCodec, "the video is \(video.codec), not \(codec)") }
        guard MediaCapabilities.container(type.container.muxer, canHold: codec) else {
            return no(.container, "\(type.rawValue) cannot hold \(codec)")
        }
        let depth = video.bitDepth ?? 8
        let maxDepth = settings.codec.keepsHighBitDepth && (settings.keepHighBitDepth ?? false) ? 10 : 8
        guard video.chromaSubsampling == "4:2:0", depth <= maxDepth else {
            return no(
                .pixelFormat,
                "the video is \(depth)-bit \(video.chromaSubsampling ?? "unknown chroma"), not \(maxDepth == 8 ? "8-bit" : "8/10-bit") 4:2:0"
            )
        }
        if settings.codec == .h264, let profile = video.profile,
            !["Constrained Baseline", "Baseline", "Main", "High"].contains(profile)
        {
            return no(.profile, "H.264 profile \(profile) is not widely playable")
        }
        if (video.rotation ?? 0) != 0 {
            return no(.rotation, "its \(video.rotation ?? 0)° rotation must be applied to the pixels")
        }
        if video.isMirrored == true { return no(.rotation, "its mirror must be applied to the pixels") }
        if let sar = video.sampleAspectRatio, sar.isValid, sar.numerator != sar.denominator {
            return no(.nonSquarePixels, "its pixels are not square")
        }
        guard let width = video.width, let height = video.height else { return no(.unknownSize, "its size is unknown") }
        let fitted = preset.outputSize(forDisplayWidth: width, height: height)
        guard fitted.width == width, fitted.height == height else {
            return no(.doesNotFit, "\(width)x\(height) does not fit \(preset.name) (\(fitted.width)x\(fitted.height))")
        }
        if let cap = settings.maxFrameRate, let rate = video.frameRate?.value, rate > cap + 0.01 {
            return no(.frameRate, "\(String(format: "%.2f", rate)) fps is above the \(Int(cap)) fps cap")
        }
        if let hdr = hdrObstacle(settings, track: video) { return no(.hdr, hdr) }
        if let cap = settings.maxBitrate {
            guard let rate = video.bitRate ?? asset.bitRate else {
                return no(.unknownBitRate, "its bit rate is unknown")
            }
            if rate > cap { return no(.bitRate, "\(rate / 1000) kb/s is above the \(cap / 1000) kb/s cap") }
        }
        if let audio = asset.audioTrack {
            guard audio.codec == "aac", audio.profile == "LC" else {
                return no(.audioCodec, "the audio is \(audio.codec), not AAC-LC")
            }
            guard (audio.channels ?? 99) <= audioSettings.maxChannels else {
                return no(.audioChannels, "the audio has \(audio.channels ?? 0) channels")
            }
            guard [44_100, 48_000].contains(audio.sampleRate ?? 0) else {
                return no(.audioSampleRate, "the audio is at \(audio.sampleRate ?? 0) Hz")
            }
            if let rate = audio.bitRate, rate > audioSettings.bitrate * 5 / 4 {
                return no(
                    .audioBitRate,
                    "the audio's \(rate / 1000) kb/s is above the preset's \(audioSettings.bitrate / 1000) kb/s")
            }
        }
        return nil
    }

    /// The video re-encoded under a preset's settings at `size`, its colours handled as `color` says.
    static func encodedVideo(
        _ settings: Preset.Video, track: AssetTrack, size: (width: Int, height: Int), color: VideoColorPlan
    ) -> ExportPlan.Video {
        let highBit = color.tenBit
        let handling: ExportPlan.ColorHandling
        var toneMapping: ToneMapping?
        switch color.color {
        case .keepSource: handling = .keepSource
        case .toneMapped(let mapping):
            handling = .toneMapped
            toneMapping = mapping
        case .bt709: handling = .bt709
        }
        let sourceRate = track.frameRate.map(\.value).flatMap { $0 > 0 ? $0 : nil }
        var rate = sourceRate
        if let cap = settings.maxFrameRate, let source = sourceRate, source > cap + 0.01 { rate = cap }
        return ExportPlan.Video(
            stream: track.index, sourceCodec: track.codec, codec: settings.codec.rawValue, copied: false,
            sourceWidth: track.displaySize?.width, sourceHeight: track.displaySize?.height, width: size.width,
            height: size.height, sourceFrameRate: sourceRate, maxFrameRate: settings.maxFrameRate, frameRate: rate,
            rotation: track.rotation ?? 0, encoder: settings.codec.encoderName, encoderPreset: settings.encoderPreset,
            crf: settings.crf, maxBitrate: settings.maxBitrate, bufferSize: settings.bufferSize,
            profile: settings.profile, pixelFormat: highBit ? "yuv420p10le" : "yuv420p", bitDepth: highBit ? 10 : 8,
            color: handling,
            colorPrimaries: highBit ? track.colorPrimaries : "bt709",
            colorTransfer: highBit ? track.colorTransfer : "bt709", colorSpace: highBit ? track.colorSpace : "bt709",
            colorRange: "tv", scaler: scaler, codecTag: settings.codec.sampleEntry,
            mirrored: track.isMirrored ?? false, sourceDynamicRange: track.dynamicRange, toneMapping: toneMapping,
            hdrMetadata: color.hdrMetadata, keyframeInterval: keyframeInterval(frameRate: rate),
            pixelAspect: track.displaySize.flatMap {
                pixelAspect(display: $0, picture: size)
            })
    }

    /// The largest difference between a picture's proportions and the source's that square pixels
    /// may leave: beyond it the pixels are shaped instead (`ExportPlan.Video.pixelAspect`).
    static let squarePixelTolerance = 0.01

    /// The pixel shape (sample aspect ratio) that shows `picture` at the proportions of `display`
    /// (the source's display size), or nil when square pixels come within `squarePixelTolerance`.
    /// The fraction is reduced, with both terms at most 65535 (H.264's and HEVC's VUI fields are 16
    /// bits): the nearest such fraction when the exact one does not fit, off by less than 1e-8.
    static func pixelAspect(display: (width: Int, height: Int), picture: (width: Int, height: Int)) -> Rational? {
        guard display.width > 0, display.height > 0, picture.width > 0, picture.height > 0 else { return nil }
        let shown = Double(display.width) / Double(display.height)
        let stored = Double(picture.width) / Double(picture.height)
        guard abs(stored / shown - 1) > squarePixelTolerance else { return nil }
        return fraction(
            numerator: display.width * picture.height, denominator: display.height * picture.width, limit: 65_535)
    }

    /// `numerator`/`denominator` reduced, or its closest continued-fraction convergent whose terms are
    /// at most `limit`.
    static func fraction(numerator: Int, denominator: Int, limit: Int) -> Rational {
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let common = gcd(numerator, denominator)
        let (p, q) = (numerator / common, denominator / common)
        if p <= limit && q <= limit { return Rational(p, q) }
        // Convergents h/k of p/q, until the next one would exceed the limit.
        var (h0, h1, k0, k1) = (0, 1, 1, 0)
        var (a, b) = (p, q)
        while b != 0 {
            let term = a / b
            let (h2, k2) = (term * h1 + h0, term * k1 + k0)
            if h2 > limit || k2 > limit { break }
            (h0, h1, k0, k1) = (h1, h2, k1, k2)
            (a, b) = (b, a - term * b)
        }
        return Rational(max(1, h1), max(1, k1))
    }

    /// Frames between keyframes at most: two seconds (the usual interval for web video, which players
    /// seek by). It also bounds what verification decodes: the first and last groups of pictures are
    /// two seconds each instead of x264's default 250 frames (8.3 s at 30 fps), which made reading a
    /// 20 s 1080p export back cost 2.9 % of its time instead of 1.1 % (for 1.1 % more bytes).
    static func keyframeInterval(frameRate: Double?) -> Int {
        max(1, Int((2 * min(max(frameRate ?? 30, 1), 240)).rounded()))
    }

    /// The video stream copied as it is.
    static func copiedVideo(_ track: AssetTrack) -> ExportPlan.Video {
        let size = track.displaySize
        let rate = track.frameRate.map(\.value).flatMap { $0 > 0 ? $0 : nil }
        return ExportPlan.Video(
            stream: track.index, sourceCodec: track.codec, codec: track.codec, copied: true,
            sourceWidth: size?.width, sourceHeight: size?.height, width: size?.width ?? 0, height: size?.height ?? 0,
            sourceFrameRate: rate, maxFrameRate: nil, frameRate: rate, rotation: 0, pixelFormat: track.pixelFormat,
            bitDepth: track.bitDepth, color: .copied, colorPrimaries: track.colorPrimaries,
            colorTransfer: track.colorTransfer, colorSpace: track.colorSpace, colorRange: track.colorRange,
            codecTag: track.codecTag, sourceDynamicRange: track.dynamicRange)
    }

    /// The audio encoded to AAC-LC: 44.1/48 kHz kept (else 48 kHz), at most the preset's channels,
    /// mono at half the stereo rate (at least 32 kb/s).
    static func encodedAudio(_ audio: Preset.Audio, track: AssetTrack) -> ExportPlan.Audio {
        let sourceRate = track.sampleRate ?? 48_000
        let rate = sourceRate == 44_100 || sourceRate == 48_000 ? sourceRate : 48_000
        let channels = max(1, min(track.channels ?? 2, audio.maxChannels))
        let bitrate = channels == 1 && audio.maxChannels == 2 ? max(32_000, audio.bitrate / 2) : audio.bitrate
        return ExportPlan.Audio(
            stream: track.index, sourceCodec: track.codec, codec: "aac", copied: false, bitRate: bitrate,
            channels: channels, sampleRate: rate, sourceChannels: track.channels, sourceSampleRate: track.sampleRate)
    }

    /// The audio stream copied as it is.
    static func copiedAudio(_ track: AssetTrack) -> ExportPlan.Audio {
        ExportPlan.Audio(
            stream: track.index, sourceCodec: track.codec, codec: track.codec, copied: true, bitRate: track.bitRate,
            channels: track.channels, sampleRate: track.sampleRate, sourceChannels: track.channels,
            sourceSampleRate: track.sampleRate)
    }

    /// Keys the muxer writes itself or that describe the old file rather than the recording.
    static let containerKeys: Set<String> = [
        "major_brand", "minor_version", "compatible_brands", "encoder", "location-eng",
    ]

    static func metadataToWrite(_ source: [String: String], policy: MetadataPolicy) -> [String: String] {
        switch policy {
        case .strip:
            return [:]
        case .keep:
            return source.filter { !containerKeys.contains($0.key) }
        case .forSharing:
            return source.filter { key, _ in
                !containerKeys.contains(key) && !MetadataPolicy.isPersonal(key)
            }
        }
    }
}

extension MetadataPolicy {
    /// Whether `sharing` drops the key: it says where the recording was made (`isLocationKey`),
    /// names the device (`isDeviceKey`), or is an identifier that ties the file to a device, a
    /// library or a person (`isIdentifierKey`). The one rule for every output that carries source
    /// metadata: a video's container keys, an image's Exif and XMP tag names.
    public static func isPersonal(_ key: String) -> Bool {
        isLocationKey(key) || isDeviceKey(key) || isIdentifierKey(key)
    }

    /// Keys (any case; QuickTime `mdta` keys, Exif and XMP tag names, with or without an
    /// `xmpMM:`-style prefix) that identify the library, the device or the person behind a file
    /// (`identifierKeys`): what `sharing` drops with the location and device keys. Playback, capture
    /// and commerce keys stay (`creation_time`, a title, `com.apple.quicktime.live-photo.auto`).
    public static func isIdentifierKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        let name = lowered.split(separator: ":").last.map(String.init) ?? lowered
        return identifierKeys.contains(lowered) || identifierKeys.contains(name)
            || ["serialnumber", "serial-number", "serial.number"].contains { lowered.contains($0) }
    }

    /// The identifier keys `sharing` drops, lowercased: QuickTime's content identifier (which pairs a
    /// Live Photo's movie with its still in the owner's library, also read as Exif's and MakerNotes'
    /// `ContentIdentifier` and `MediaGroupUUID`) and Photos' originating signature; the camera
    /// owner's name; Exif's and XMP's unique image and document identifiers. Serial numbers (of a
    /// body, a lens, a device) are matched by name. An author, artist or copyright is a credit the
    /// sharer chose, and stays, as `AVMetadataItemFilter.forSharing` keeps commerce items.
    public static let identifierKeys: Set<String> = [
        "com.apple.quicktime.content.identifier", "com.apple.photos.originating.signature",
        "contentidentifier", "mediagroupuuid", "imageuniqueid", "ownername", "cameraownername",
        "documentid", "instanceid", "originaldocumentid",
    ]

    /// Whether a container metadata key says where the recording was made (`location`,
    /// `com.apple.quicktime.location.ISO6709`, `©xyz`, GPS keys): what `sharing` drops, with the
    /// device keys.
    public static func isLocationKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return ["location", "gps", "xyz"].contains { lowered.contains($0) }
    }

    /// Whether a container metadata key names the device or its software (`make`, `model`,
    /// `com.apple.quicktime.software`, `com.android.*`).
    public static func isDeviceKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return ["make", "model", "software", "com.android."].contains { lowered.contains($0) }
    }
}

extension ExportPlan {
    /// Sets what becomes of the stream with this index.
    fileprivate mutating func mark(_ index: Int, _ action: StreamAction) {
        guard let position = streams.firstIndex(where: { $0.index == index }) else { return }
        streams[position].action = action
        streams[position].reason = nil
    }
}
