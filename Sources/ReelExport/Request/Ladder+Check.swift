import Foundation
public import ReelMedia

extension Ladder {
    /// What an hls ladder export of `asset` under `preset` checks before any work, without doing
    /// any: the asset has a video stream, the preset makes 8-bit H.264 or HEVC of it, and at least
    /// one rung is at most the source's size. `reel submit` and a manifest line check a queued ladder with it, so
    /// they refuse what `ExportSession` would refuse when the job runs, in the same words. Throws
    /// `no-video`, `invalid-argument` or what `ExportPlanner.decide` throws.
    public func check(
        asset: Asset, preset: Preset, timeRange: TimeRange?, background: RGBColor = .black,
        limits: InputLimits = Asset.defaultLimits
    ) throws(ExportError) {
        _ = try planned(
            asset: asset, preset: preset, timeRange: timeRange, metadata: .keep, background: background, limits: limits)
    }

    /// What an hls ladder export plans before any work: the export's plan, its transcode, the encoding
    /// the rungs start from, the audio, the rungs kept and dropped for the source's size, and when the
    /// rungs keep HDR (and `writesSDRRungs`), the encoding the SDR rungs beside them start from: what
    /// the largest kept box's H.264 preset (`sdrRungPresets`) plans for the same asset, tone-mapped as
    /// an export under it is. `check` and `ExportSession.runLadder` both stand on it, so a queued
    /// ladder is refused in the words the export would use.
    func planned(
        asset: Asset, preset: Preset, timeRange: TimeRange?, metadata: MetadataPolicy, background: RGBColor,
        limits: InputLimits
    ) throws(ExportError) -> PlannedLadder {
        let plan = try ExportPlanner.decide(
            asset: asset, preset: preset, type: .mp4, timeRange: timeRange, metadata: metadata,
            optimizeForNetwork: true, forceTranscode: true, background: background)
        let transcode = plan.transcodePlan(limits: limits)
        guard case .transcode(let planned?, let audio) = transcode.mode else {
            throw ExportError(.noVideo, "an hls ladder needs a video stream to encode")
        }
        // H.264 rungs are 8-bit SDR (HDR tone-mapped); HEVC and AV1 rungs follow their presets' colour
        // rules (`ExportPlanner.videoColor`): a 10-bit source keeps its depth and colours, HLG or PQ kept.
        guard planned.encoding.codec != .h264 || (!planned.encoding.tenBit && planned.encoding.color != .keepSource)
        else {
            throw ExportError(
                .invalidArgument,
                "an hls ladder of H.264 is 8-bit SDR; preset \(preset.name) makes \(planned.encoding.codec.rawValue) 10-bit (HDR is kept by HEVC presets: --preset HEVC1920x1080)"
            )
        }
        guard let source = asset.displaySize else { throw ExportError(.noVideo, "the asset has no video size") }
        let (fitted, dropped) = self.fitted(forSourceWidth: source.width, height: source.height)
        guard !fitted.isEmpty else {
            throw ExportError(
                .invalidArgument,
                "every rung of the ladder (\(sizes.map(\.description).joined(separator: ", "))) is larger than the source (\(source.width)x\(source.height)); name one at most its size"
            )
        }
        // HEVC or AV1 rungs keeping an HDR source's HLG or PQ (or a Dolby Vision base layer).
        let keepsHDR =
            planned.encoding.codec != .h264 && planned.encoding.color == .keepSource
            && plan.video?.sourceDynamicRange?.isHDR == true
        var sdr: StreamEncoding<VideoEncoding>?
        if keepsHDR && writesSDRRungs {
            let sdrPreset = try sdrRungPreset(box: fitted[0].box)
            let sdrPlan = try ExportPlanner.decide(
                asset: asset, preset: sdrPreset, type: .mp4, timeRange: timeRange, metadata: metadata,
                optimizeForNetwork: true, forceTranscode: true, background: background)
            guard case .transcode(let video?, _) = sdrPlan.transcodePlan(limits: limits).mode,
                video.encoding.codec == .h264, !video.encoding.tenBit, case .toneMapped = video.encoding.color
            else {
                throw ExportError(
                    .incompatiblePreset,
                    "the SDR rungs beside the HDR ones cannot be planned: \(sdrPreset.name) does not tone-map this source to 8-bit H.264 (--no-sdr-rungs leaves them out)"
                )
            }
            sdr = video
        }
        return PlannedLadder(
            exportPlan: plan, transcode: transcode, video: planned, audio: audio, fitted: fitted, dropped: dropped,
            keepsHDR: keepsHDR, sdr: sdr)
    }
}

/// `Ladder.planned`'s answer.
struct PlannedLadder {
    var exportPlan: ExportPlan
    var transcode: TranscodePlan
    var video: StreamEncoding<VideoEncoding>
    var audio: StreamEncoding<AudioEncoding>?
    var fitted: [(box: Int, size: Ladder.Size)]
    var dropped: [Ladder.Size]
    /// Whether the rungs keep an HDR source's HDR (HEVC Main 10, HLG or PQ).
    var keepsHDR: Bool
    /// Where the SDR rungs beside HDR ones start from (8-bit H.264, tone-mapped); nil: none.
    var sdr: StreamEncoding<VideoEncoding>?
}
