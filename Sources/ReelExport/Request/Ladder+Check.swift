import Foundation
public import ReelMedia

extension Ladder {
    /// What an hls ladder export of `asset` under `preset` checks before any work, without doing
    /// any: the asset has a video stream, the preset makes 8-bit H.264 of it, and at least one rung is
    /// at most the source's size. `reel submit` and a manifest line check a queued ladder with it, so
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
    /// the rungs start from, the audio, and the rungs kept and dropped for the source's size. `check`
    /// and `ExportSession.runLadder` both stand on it, so a queued ladder is refused in the words the
    /// export would use.
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
        guard planned.encoding.codec == .h264, !planned.encoding.tenBit, planned.encoding.color != .keepSource else {
            throw ExportError(
                .invalidArgument,
                "an hls ladder is 8-bit H.264 in this version; preset \(preset.name) makes \(planned.encoding.codec.rawValue)"
                    + (planned.encoding.tenBit ? " 10-bit" : ""))
        }
        guard let source = asset.displaySize else { throw ExportError(.noVideo, "the asset has no video size") }
        let (fitted, dropped) = self.fitted(forSourceWidth: source.width, height: source.height)
        guard !fitted.isEmpty else {
            throw ExportError(
                .invalidArgument,
                "every rung of the ladder (\(sizes.map(\.description).joined(separator: ", "))) is larger than the source (\(source.width)x\(source.height)); name one at most its size"
            )
        }
        return PlannedLadder(
            exportPlan: plan, transcode: transcode, video: planned, audio: audio, fitted: fitted, dropped: dropped)
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
}
