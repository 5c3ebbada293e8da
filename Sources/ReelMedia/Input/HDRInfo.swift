/// How a video stream's pictures are meant to be shown: standard or high dynamic range, and which kind.
public enum DynamicRange: String, Sendable, Equatable, Codable {
    /// Standard dynamic range (BT.709/BT.601/BT.1886 and anything untagged).
    case sdr
    /// Hybrid Log-Gamma (ITU-R BT.2100, ARIB STD-B67): what phones record by default.
    case hlg
    /// Perceptual quantizer (SMPTE ST 2084), HDR10 when it carries static metadata.
    case pq
    /// Dolby Vision: a configuration record says so; `DolbyVisionConfiguration.baseLayer` tells what
    /// a player without Dolby Vision shows.
    case dolbyVision = "dolby-vision"

    /// Whether the pictures are HDR (HLG, PQ or Dolby Vision).
    public var isHDR: Bool { self != .sdr }
}

/// A Dolby Vision decoder configuration record (the `dvcC`/`dvvC` box of an MP4 sample entry).
public struct DolbyVisionConfiguration: Sendable, Equatable, Codable {
    public var versionMajor: Int
    public var versionMinor: Int
    /// Dolby Vision profile: 5 (no compatible base layer), 7, 8 (single layer over HDR10, SDR or HLG), …
    public var profile: Int
    public var level: Int
    /// Whether the stream carries RPUs (per-frame reshaping metadata), an enhancement layer, a base layer.
    public var rpuPresent: Bool
    public var enhancementLayerPresent: Bool
    public var baseLayerPresent: Bool
    /// `dv_bl_signal_compatibility_id`: 0 none, 1 HDR10, 2 SDR, 4 HLG, 6 HDR10 (Blu-ray).
    public var compatibilityID: Int

    public init(
        versionMajor: Int, versionMinor: Int, profile: Int, level: Int, rpuPresent: Bool,
        enhancementLayerPresent: Bool, baseLayerPresent: Bool, compatibilityID: Int
    ) {
        self.versionMajor = versionMajor
        self.versionMinor = versionMinor
        self.profile = profile
        self.level = level
        self.rpuPresent = rpuPresent
        self.enhancementLayerPresent = enhancementLayerPresent
        self.baseLayerPresent = baseLayerPresent
        self.compatibilityID = compatibilityID
    }

    /// What a decoder without Dolby Vision sees in the base layer, or nil when there is no compatible
    /// base layer (profile 5, or compatibility id 0): such a stream cannot be shown without the RPUs.
    public var baseLayer: DynamicRange? {
        guard baseLayerPresent, profile != 5 else { return nil }
        switch compatibilityID {
        case 1, 6: return .pq
        case 2: return .sdr
        case 4: return .hlg
        default: return nil
        }
    }

    /// The profile as people write it: `8.4`, `8.1`, `5`.
    public var name: String { compatibilityID == 0 ? "\(profile)" : "\(profile).\(compatibilityID)" }
}

/// A point of the CIE 1931 xy chromaticity diagram.
public struct Chromaticity: Sendable, Equatable, Codable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// The mastering display colour volume (SMPTE ST 2086): the display the content was graded on.
public struct MasteringDisplay: Sendable, Equatable, Codable {
    /// Primaries in red, green, blue order, and the white point; nil when the metadata gives none.
    public var red: Chromaticity?
    public var green: Chromaticity?
    public var blue: Chromaticity?
    public var whitePoint: Chromaticity?
    /// Luminance range in cd/m², nil when the metadata gives none.
    public var minLuminance: Double?
    public var maxLuminance: Double?

    public init(
        red: Chromaticity? = nil, green: Chromaticity? = nil, blue: Chromaticity? = nil,
        whitePoint: Chromaticity? = nil, minLuminance: Double? = nil, maxLuminance: Double? = nil
    ) {
        self.red = red
        self.green = green
        self.blue = blue
        self.whitePoint = whitePoint
        self.minLuminance = minLuminance
        self.maxLuminance = maxLuminance
    }
}

/// Content light level (CTA-861.3): the brightest pixel and the brightest frame average, in cd/m².
public struct ContentLightLevel: Sendable, Equatable, Codable {
    /// MaxCLL; 0 means unknown.
    public var maxContentLightLevel: Int
    /// MaxFALL; 0 means unknown.
    public var maxFrameAverageLightLevel: Int
    public init(maxContentLightLevel: Int, maxFrameAverageLightLevel: Int) {
        self.maxContentLightLevel = maxContentLightLevel
        self.maxFrameAverageLightLevel = maxFrameAverageLightLevel
    }
}

/// Where a stream's HDR static metadata was found.
public enum HDRMetadataSource: String, Sendable, Codable {
    /// The container (`mdcv`/`clli` boxes, Matroska colour elements).
    case container
    /// SEI messages of the first decoded frame.
    case bitstream
}

extension StreamInfo {
    /// The brightest light the pictures hold, in cd/m², for tone mapping: the content light level
    /// (MaxCLL), else the mastering display's peak, else 1000 (HLG's nominal peak, and the usual
    /// HDR10 grade). Nil for SDR.
    public var peakLuminance: Double? {
        guard let range = dynamicRange, range.isHDR else { return nil }
        if let level = contentLightLevel?.maxContentLightLevel, level > 0 { return Double(level) }
        if let peak = masteringDisplay?.maxLuminance, peak > 0 { return peak }
        return 1000
    }

    /// The transfer a decoder without Dolby Vision shows: the base layer's for Dolby Vision streams
    /// (nil when there is no compatible base layer), the stream's own otherwise.
    public var baseDynamicRange: DynamicRange? {
        guard let range = dynamicRange else { return nil }
        if range == .dolbyVision { return dolbyVision?.baseLayer }
        return range
    }
}

/// HDR10 static metadata: the mastering display and the content light level, either or both.
public struct HDRStaticMetadata: Sendable, Equatable, Codable {
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    public init(masteringDisplay: MasteringDisplay? = nil, contentLightLevel: ContentLightLevel? = nil) {
        self.masteringDisplay = masteringDisplay
        self.contentLightLevel = contentLightLevel
    }
}

/// How HLG or PQ pictures become SDR BT.709 ones, following ITU-R BT.2408: HDR reference white
/// (203 cd/m²) becomes SDR white, highlights roll off (BT.2390's curve) up to each picture's own
/// peak, measured, never above `peakLuminance`, the BT.2020 gamut is mapped into BT.709 keeping hue
/// and luminance, and HLG's system gamma is applied to the luminance as BT.2100's OOTF.
public struct ToneMapping: Sendable, Equatable, Codable {
    /// The source's transfer.
    public enum Transfer: String, Sendable, Codable {
        case hlg, pq
    }
    public var transfer: Transfer
    /// The brightest light of the source in cd/m² (`StreamInfo.peakLuminance`): the roll-off never
    /// ends higher.
    public var peakLuminance: Double
    /// Whether the source's primaries are BT.2020 (else BT.709: no gamut mapping needed).
    public var bt2020Primaries: Bool

    public init(transfer: Transfer, peakLuminance: Double, bt2020Primaries: Bool = true) {
        self.transfer = transfer
        self.peakLuminance = peakLuminance
        self.bt2020Primaries = bt2020Primaries
    }
}

extension StreamInfo {
    /// The tone mapping that shows this stream as SDR, or nil when it is SDR or has no base layer a
    /// decoder without Dolby Vision can show (profile 5).
    public var toneMapping: ToneMapping? {
        let transfer: ToneMapping.Transfer
        switch baseDynamicRange {
        case .hlg: transfer = .hlg
        case .pq: transfer = .pq
        default: return nil
        }
        return ToneMapping(
            transfer: transfer, peakLuminance: peakLuminance ?? 1000, bt2020Primaries: colorPrimaries != "bt709")
    }

    /// The HDR10 static metadata this stream carries (container or first frame), or nil.
    public var hdrStaticMetadata: HDRStaticMetadata? {
        guard masteringDisplay != nil || contentLightLevel != nil else { return nil }
        return HDRStaticMetadata(masteringDisplay: masteringDisplay, contentLightLevel: contentLightLevel)
    }
}
