import Foundation
import ReelMedia

/// Which container metadata an export keeps.
public enum MetadataPolicy: String, Sendable, Codable, CaseIterable {
    /// Keep everything (creation time, location, make/model, content identifier, titles).
    case keep
    /// Like `AVMetadataItemFilter.forSharing`: drop location and device items, keep the rest.
    case forSharing = "sharing"
    /// Write no source metadata at all.
    case strip
}

/// A part of the source, in seconds from its start.
public struct TimeRange: Sendable, Equatable, Codable, CustomStringConvertible {
    public var start: Double
    /// Nil means to the end.
    public var end: Double?
    public init(start: Double, end: Double?) {
        self.start = start
        self.end = end
    }
    /// Parses `a-b`, `a-`, where a and b are seconds (`12.5`) or `[hh:]mm:ss[.fff]`.
    public init?(parsing text: String) {
        guard let dash = text.firstIndex(of: "-", where: { $0 != text.startIndex }) else { return nil }
        guard let start = TimeRange.seconds(String(text[..<dash])) else { return nil }
        let rest = String(text[text.index(after: dash)...])
        let end = rest.isEmpty ? nil : TimeRange.seconds(rest)
        if !rest.isEmpty && end == nil { return nil }
        self.init(start: start, end: end)
    }
    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for part in parts {
            guard let value = Double(part), value >= 0, value.isFinite else { return nil }
            total = total * 60 + value
        }
        return total
    }
    public var description: String { "\(start)-\(end.map { String($0) } ?? "")" }
}

extension String {
    fileprivate func firstIndex(of character: Character, where accept: (Index) -> Bool) -> Index? {
        indices.first { self[$0] == character && accept($0) }
    }
}

/// What an export will do, decided before any work: streams, sizes, codecs, or why it cannot.
public struct ExportDecision: Sendable {
    /// The plan ReelMedia executes (its output path is filled in by the session).
    public var plan: TranscodePlan
    /// Output display size, when there is video.
    public var width: Int?
    public var height: Int?
    /// Streams a Passthrough export leaves out because the container cannot hold them.
    public var skippedStreams: [Int]
    /// How the export is done.
    public var method: ExportMethod = .transcode
    /// Why: for a video preset, why the source could or could not simply be copied.
    public var reason: String = ""
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

    /// Builds the plan or throws `incompatible-preset` / `invalid-argument` with a clear reason.
    public static func decide(
        asset: Asset, preset: Preset, type: OutputType, timeRange: TimeRange?, metadata: MetadataPolicy,
        optimizeForNetwork: Bool, limits: InputLimits, forceTranscode: Bool = false
    ) throws(ExportError) -> ExportDecision {
        if let range = timeRange {
            if let end = range.end, end <= range.start {
                throw ExportError(
                    .invalidArgument, "the time range ends (\(end) s) before it starts (\(range.start) s)")
            }
            if asset.duration > 0, range.start >= asset.duration {
                throw ExportError(
                    .invalidArgument,
                    "the time range starts at \(range.start) s, after the end of the asset (\(String(format: "%.3f", asset.duration)) s)"
                )
            }
        }
        var plan = TranscodePlan(
            inputPath: asset.url.path, outputPath: "", container: type.container,
            mode: .transcode(video: nil, audio: nil), faststart: optimizeForNetwork,
            metadata: metadataToWrite(asset.metadata, policy: metadata),
            startSeconds: timeRange.map(\.start).flatMap { $0 > 0 ? $0 : nil }, endSeconds: timeRange?.end,
            policy: limits)
        var decision = ExportDecision(plan: plan, skippedStreams: [])
        switch preset.kind {
        case .passthrough:
            if type.isAudioOnly, asset.videoTrack != nil {
                throw ExportError(
                    .incompatiblePreset,
                    "Passthrough cannot write the video of \(asset.url.lastPathComponent) into an m4a file; use --type mp4 or the AppleM4A preset"
                )
            }
            var copy: [Int] = []
            for track in asset.tracks {
                let wanted: Bool
                switch track.kind {
                case .video: wanted = !type.isAudioOnly && !track.isAttachedPicture
                case .audio: wanted = true
                case .subtitle: wanted = !type.isAudioOnly
                default: wanted = false
                }
                guard wanted else { continue }
                if MediaCapabilities.container(type.container.muxer, canHold: track.codec) {
                    copy.append(track.index)
                } else if track.index == asset.videoTrack?.index || track.index == asset.audioTrack?.index {
                    throw ExportError(
                        .incompatiblePreset,
                        "Passthrough cannot put \(track.codec) (\(track.kind.rawValue) track \(track.index)) in a \(type.rawValue) file; choose another output type or a re-encoding preset"
                    )
                } else {
                    decision.skippedStreams.append(track.index)
                }
            }
            if copy.isEmpty {
                throw ExportError(.incompatiblePreset, "Passthrough found no video or audio track to copy")
            }
            plan.mode = .copy(streams: copy)
            decision.method = .passthrough
            decision.reason = "the Passthrough preset copies every stream"
            if let video = asset.videoTrack, let size = video.displaySize {
                decision.width = size.width
                decision.height = size.height
            }
        case .audio:
            if type == .m4v {
                throw ExportError(.incompatiblePreset, "\(preset.name) writes audio only; use --type m4a (or mp4/mov)")
            }
            guard let track = asset.audioTrack, let audio = preset.audio else {
                throw ExportError(
                    .incompatiblePreset,
                    "\(preset.name) needs an audio track and \(asset.url.lastPathComponent) has none")
            }
            plan.mode = .transcode(
                video: nil, audio: StreamEncoding(stream: track.index, encoding: audioEncoding(audio, track: track)))
        case .video:
            if type.isAudioOnly {
                throw ExportError(
                    .incompatiblePreset,
                    "\(preset.name) writes video, which an m4a file cannot hold; use AppleM4A for m4a")
            }
            guard let settings = preset.video, let audio = preset.audio else {
                throw ExportError(.invalidPreset, "\(preset.name) has no video settings")
            }
            if asset.videoTrack == nil && asset.audioTrack == nil {
                throw ExportError(.unreadableInput, "\(asset.url.lastPathComponent) has no video or audio track")
            }
            var video: StreamEncoding<VideoEncoding>?
            if let track = asset.videoTrack {
                guard let display = track.displaySize, display.width > 0, display.height > 0 else {
                    throw ExportError(.unreadableInput, "the video track of \(asset.url.lastPathComponent) has no size")
                }
                let size = preset.outputSize(forDisplayWidth: display.width, height: display.height)
                let highBit =
                    settings.codec == .hevc && (settings.keepHighBitDepth ?? false) && (track.bitDepth ?? 8) > 8
                video = StreamEncoding(
                    stream: track.index,
                    encoding: VideoEncoding(
                        codec: settings.codec, width: size.width, height: size.height, rotation: track.rotation ?? 0,
                        tenBit: highBit, color: highBit ? .keepSource : .bt709, encoderPreset: settings.encoderPreset,
                        crf: settings.crf, maxBitrate: settings.maxBitrate, bufferSize: settings.bufferSize,
                        maxFrameRate: settings.maxFrameRate, profile: settings.profile))
                decision.width = size.width
                decision.height = size.height
            }
            plan.mode = .transcode(
                video: video,
                audio: asset.audioTrack.map {
                    StreamEncoding(stream: $0.index, encoding: audioEncoding(audio, track: $0))
                })
            // Smart passthrough: a source that already is what the preset would make is copied.
            let verdict =
                forceTranscode
                ? "re-encoding was forced"
                : smartPassthroughObstacle(asset: asset, preset: preset, type: type, timeRange: timeRange)
            if let verdict {
                decision.reason = "re-encoded: \(verdict)"
            } else {
                plan.mode = .copy(streams: [asset.videoTrack?.index, asset.audioTrack?.index].compactMap { $0 })
                decision.method = .smartPassthrough
                decision.reason =
                    "copied: the source already fits \(preset.name) (codec, size, frame rate, bit rate, audio)"
            }
        }
        decision.plan = plan
        return decision
    }

    /// Why the source cannot simply be copied under a video preset, or nil when it can: same codec
    /// (8-bit 4:2:0 H.264, or HEVC within the preset's depth), inside the box at its own size, square
    /// pixels, no rotation to apply, frame rate and bit rate within the caps, SDR for H.264, and audio
    /// that is already AAC-LC with at most the preset's channels at 44.1/48 kHz.
    static func smartPassthroughObstacle(asset: Asset, preset: Preset, type: OutputType, timeRange: TimeRange?)
        -> String?
    {
        guard let settings = preset.video, let audioSettings = preset.audio else { return "not a video preset" }
        guard let video = asset.videoTrack else { return "the asset has no video" }
        if timeRange != nil { return "a time range is cut frame-accurately" }
        let codec = settings.codec == .h264 ? "h264" : "hevc"
        guard video.codec == codec else { return "the video is \(video.codec), not \(codec)" }
        guard MediaCapabilities.container(type.container.muxer, canHold: codec) else {
            return "\(type.rawValue) cannot hold \(codec)"
        }
        let depth = video.bitDepth ?? 8
        let maxDepth = settings.codec == .hevc && (settings.keepHighBitDepth ?? false) ? 10 : 8
        guard video.chromaSubsampling == "4:2:0", depth <= maxDepth else {
            return
                "the video is \(depth)-bit \(video.chromaSubsampling ?? "unknown chroma"), not \(maxDepth == 8 ? "8-bit" : "8/10-bit") 4:2:0"
        }
        if settings.codec == .h264, let profile = video.profile,
            !["Constrained Baseline", "Baseline", "Main", "High"].contains(profile)
        {
            return "H.264 profile \(profile) is not widely playable"
        }
        if (video.rotation ?? 0) != 0 { return "its \(video.rotation ?? 0)° rotation must be applied to the pixels" }
        if let sar = video.sampleAspectRatio, sar.isValid, sar.numerator != sar.denominator {
            return "its pixels are not square"
        }
        guard let width = video.width, let height = video.height else { return "its size is unknown" }
        let fitted = preset.outputSize(forDisplayWidth: width, height: height)
        guard fitted.width == width, fitted.height == height else {
            return "\(width)x\(height) does not fit \(preset.name) (\(fitted.width)x\(fitted.height))"
        }
        if let cap = settings.maxFrameRate, let rate = video.frameRate?.value, rate > cap + 0.01 {
            return "\(String(format: "%.2f", rate)) fps is above the \(Int(cap)) fps cap"
        }
        if settings.codec == .h264, let transfer = video.colorTransfer,
            ["smpte2084", "arib-std-b67"].contains(transfer)
        {
            return "HDR (\(transfer)) must be converted to SDR"
        }
        if let cap = settings.maxBitrate {
            guard let rate = video.bitRate ?? asset.bitRate else { return "its bit rate is unknown" }
            if rate > cap { return "\(rate / 1000) kb/s is above the \(cap / 1000) kb/s cap" }
        }
        if let audio = asset.audioTrack {
            guard audio.codec == "aac", audio.profile == "LC" else { return "the audio is \(audio.codec), not AAC-LC" }
            guard (audio.channels ?? 99) <= audioSettings.maxChannels else {
                return "the audio has \(audio.channels ?? 0) channels"
            }
            guard [44_100, 48_000].contains(audio.sampleRate ?? 0) else {
                return "the audio is at \(audio.sampleRate ?? 0) Hz"
            }
            if let rate = audio.bitRate, rate > audioSettings.bitrate * 5 / 4 {
                return "the audio's \(rate / 1000) kb/s is above the preset's \(audioSettings.bitrate / 1000) kb/s"
            }
        }
        return nil
    }

    static func audioEncoding(_ audio: Preset.Audio, track: AssetTrack) -> AudioEncoding {
        let sourceRate = track.sampleRate ?? 48_000
        let rate = sourceRate == 44_100 || sourceRate == 48_000 ? sourceRate : 48_000
        let channels = max(1, min(track.channels ?? 2, audio.maxChannels))
        // Keep the bit rate sensible for mono: half of the stereo figure, at least 32 kb/s.
        let bitrate = channels == 1 && audio.maxChannels == 2 ? max(32_000, audio.bitrate / 2) : audio.bitrate
        return AudioEncoding(bitrate: bitrate, channels: channels, sampleRate: rate)
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
                let lowered = key.lowercased()
                if containerKeys.contains(key) { return false }
                let private_ = ["location", "make", "model", "software", "com.android.", "gps", "xyz"]
                return !private_.contains { lowered.contains($0) }
            }
        }
    }
}
