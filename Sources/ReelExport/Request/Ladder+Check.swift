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
        let plan = try ExportPlanner.decide(
            asset: asset, preset: preset, type: .mp4, timeRange: timeRange, metadata: .keep, optimizeForNetwork: true,
            forceTranscode: true, background: background)
        guard case .transcode(let planned?, _) = plan.transcodePlan(limits: limits).mode else {
            throw ExportError(.noVideo, "an hls ladder needs a video stream to encode")
        }
        guard planned.encoding.codec == .h264, !planned.encoding.tenBit, planned.encoding.color != .keepSource else {
            throw ExportError(
                .invalidArgument,
                "an hls ladder is 8-bit H.264 in this version; preset \(preset.name) makes \(planned.encoding.codec.rawValue)"
                    + (planned.encoding.tenBit ? " 10-bit" : ""))
        }
        guard let source = asset.displaySize else { throw ExportError(.noVideo, "the asset has no video size") }
        if rungs(forSourceWidth: source.width, height: source.height).kept.isEmpty {
            throw ExportError(
                .invalidArgument,
                "every rung of the ladder (\(sizes.map(\.description).joined(separator: ", "))) is larger than the source (\(source.width)x\(source.height)); name one at most its size"
            )
        }
    }
}
