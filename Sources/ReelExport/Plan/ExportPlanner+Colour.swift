internal import ReelMedia

/// What a re-encoding video preset does with the colours of a track.
///
/// | Source | H.264 presets, and HEVC or AV1 ones making 8-bit | HEVC and AV1 presets keeping 10-bit |
/// |---|---|---|
/// | SDR | BT.709 | source's colours |
/// | HLG, PQ (HDR10) | tone-mapped to SDR BT.709 | kept, with HDR10 metadata |
/// | Dolby Vision 8.1, 8.4 | its base layer tone-mapped | its base layer kept, no Dolby Vision configuration |
/// | Dolby Vision 5 | refused (`unsupported-codec`) | refused |
struct VideoColorPlan: Equatable {
    var tenBit: Bool
    var color: VideoEncoding.Color
    var hdrMetadata: HDRStaticMetadata?
}

extension ExportPlanner {
    /// Whether `settings` keep a track's high bit depth, and with it HDR: HEVC or AV1 with `keepHighBitDepth`
    /// on a source of more than 8 bits.
    static func keepsHighBitDepth(_ settings: Preset.Video, track: AssetTrack) -> Bool {
        settings.codec.keepsHighBitDepth && (settings.keepHighBitDepth ?? false) && (track.bitDepth ?? 8) > 8
    }

    /// The colour handling of `track` re-encoded under `settings`. Throws `unsupported-codec` for
    /// Dolby Vision without a base layer other players can show (profile 5): re-encoding cannot
    /// apply its RPU reshaping, so the pictures would come out green and purple.
    static func videoColor(_ settings: Preset.Video, track: AssetTrack, presetName: String) throws(ExportError)
        -> VideoColorPlan
    {
        if track.dynamicRange == .dolbyVision, let dolbyVision = track.dolbyVision, dolbyVision.baseLayer == nil {
            throw ExportError(
                .unsupportedCodec,
                "Dolby Vision profile \(dolbyVision.name) has no base layer that players without Dolby Vision can show, so \(presetName) cannot re-encode it; the Passthrough preset copies it unchanged"
            )
        }
        if keepsHighBitDepth(settings, track: track) {
            let metadata = track.baseDynamicRange?.isHDR == true ? track.hdrStaticMetadata : nil
            return VideoColorPlan(tenBit: true, color: .keepSource, hdrMetadata: metadata)
        }
        if let mapping = track.toneMapping { return VideoColorPlan(tenBit: false, color: .toneMapped(mapping)) }
        return VideoColorPlan(tenBit: false, color: .bt709)
    }

    /// Why an HDR track cannot be copied under a video preset (it would stay HDR where the preset
    /// makes SDR), or nil.
    static func hdrObstacle(_ settings: Preset.Video, track: AssetTrack) -> String? {
        guard let range = track.dynamicRange, range.isHDR, !keepsHighBitDepth(settings, track: track) else {
            return nil
        }
        let kind = range == .dolbyVision ? "Dolby Vision \(track.dolbyVision?.name ?? "")" : range.rawValue.uppercased()
        return "HDR (\(kind)) must be converted to SDR"
    }
}
