import Foundation
public import ReelMedia

/// An export preset, decoded from `Presets/<Name>.json`: what it produces, with every number visible.
public struct Preset: Sendable, Codable, Equatable {
    /// What a preset does with the source.
    public enum Kind: String, Sendable, Codable {
        /// Re-encodes video (and audio) to fit the preset's box.
        case video
        /// Writes audio only (AAC).
        case audio
        /// Copies streams unchanged into the new container.
        case passthrough
        /// An adaptive-streaming ladder (output type `hls`): rungs named by video presets.
        case ladder
    }

    /// A ladder preset's settings (`"kind": "ladder"`).
    public struct Ladder: Sendable, Codable, Equatable {
        /// The rungs: names of H.264 video presets with a box, or of HEVC ones (HDR kept as those
        /// presets keep it), each giving a rung's size (its box) and encoder settings; the largest
        /// one's colour rules and audio settings are the ladder's.
        public var rungs: [String]
        /// Seconds per segment (default 6).
        public var segmentDuration: Double?
        /// `hls`, `dash` (default `["hls"]`).
        public var manifests: [String]?
        /// HEVC rungs keeping an HLG or PQ source's HDR: also write tone-mapped H.264 SDR rungs in the
        /// same boxes (`ReelExport.Ladder.sdrRungs`). Default true.
        public var sdrRungs: Bool?
    }

    /// Video settings.
    public struct Video: Sendable, Codable, Equatable {
        /// `h264`, `hevc` or `av1`.
        public var codec: VideoEncoding.Codec
        /// The box the picture must fit in, as [long side, short side]; matched to the video's
        /// orientation. Absent: keep the source size.
        public var box: [Int]?
        /// Output width and height are rounded to a multiple of this (2 at least).
        public var sizeMultiple: Int?
        /// x264/x265 preset name; for AV1, SVT-AV1's preset number ("0" slowest to "13").
        public var encoderPreset: String
        /// Constant rate factor (0–51; AV1: a whole number, 1–63).
        public var crf: Double
        /// VBV cap in bits per second.
        public var maxBitrate: Int?
        /// VBV buffer in bits.
        public var bufferSize: Int?
        /// Frame-rate cap; absent keeps the source rate.
        public var maxFrameRate: Double?
        /// Codec profile (`high`); absent lets the encoder choose.
        public var profile: String?
        /// HEVC and AV1: keep 10-bit and the source's colours (HDR) when the source has more than 8 bits.
        public var keepHighBitDepth: Bool?
        /// A picture quality to keep (`"ssim:0.985"`, `"psnr:42"`): the CRF is searched on samples of
        /// each export (`ExportSession.qualityTarget`, which overrides it), and `crf` is the first
        /// trial. Absent: `crf` is used as it is.
        public var target: QualityTarget?
    }

    /// Audio settings (always AAC-LC).
    public struct Audio: Sendable, Codable, Equatable {
        /// Must be `aac`.
        public var codec: String
        /// Bits per second.
        public var bitrate: Int
        /// At most this many channels (1 or 2); more are downmixed.
        public var maxChannels: Int
    }

    /// The canonical name (`1280x720`).
    public var name: String
    /// One line saying what the preset produces.
    public var summary: String
    /// Where it stands in lists (`reel presets`, the documentation's tables): lower first; presets
    /// without one come after, by name. An override of a shipped preset keeps the shipped one's place.
    public var order: Int?
    /// Other names it answers to (case-insensitive), besides `AVAssetExportPreset<name>`.
    public var aliases: [String]?
    public var kind: Kind
    public var video: Video?
    public var audio: Audio?
    /// A ladder preset's rungs and segments.
    public var ladder: Ladder?

    /// Apple's constant name for this preset.
    public var appleName: String { "AVAssetExportPreset" + name }
}

extension Preset {
    /// Checks the numbers; throws a message naming the field.
    func validate() throws(PresetFieldError) {
        switch kind {
        case .video:
            guard let video else { throw PresetFieldError(field: "video", problem: "is required for a video preset") }
            if let box = video.box {
                guard box.count == 2, box.allSatisfy({ $0 >= 2 }) else {
                    throw PresetFieldError(
                        field: "video.box", problem: "must be [long side, short side], each at least 2")
                }
                guard box[0] >= box[1] else {
                    throw PresetFieldError(field: "video.box", problem: "must list the long side first")
                }
            }
            if let multiple = video.sizeMultiple, multiple < 2 || multiple % 2 != 0 {
                throw PresetFieldError(field: "video.sizeMultiple", problem: "must be an even number of at least 2")
            }
            if video.codec == .av1 {
                // SVT-AV1's CRF is a whole number from 1 to 63, its preset a number from 0 to 13.
                guard (1...63).contains(video.crf), video.crf.rounded() == video.crf else {
                    throw PresetFieldError(
                        field: "video.crf", problem: "must be a whole number between 1 and 63 for av1")
                }
                guard VideoEncoding.svtPreset(video.encoderPreset) != nil else {
                    throw PresetFieldError(
                        field: "video.encoderPreset",
                        problem:
                            "must be an SVT-AV1 preset number from 0 (slowest) to 13 for av1, not '\(video.encoderPreset)'"
                    )
                }
                if let profile = video.profile, profile != "main" {
                    throw PresetFieldError(field: "video.profile", problem: "must be main (or absent) for av1")
                }
            } else {
                guard (0...51).contains(video.crf) else {
                    throw PresetFieldError(field: "video.crf", problem: "must be between 0 and 51")
                }
            }
            if (video.maxBitrate == nil) != (video.bufferSize == nil) {
                throw PresetFieldError(field: "video.bufferSize", problem: "maxBitrate and bufferSize go together")
            }
            if let rate = video.maxBitrate, rate <= 0 {
                throw PresetFieldError(field: "video.maxBitrate", problem: "must be positive")
            }
            if let rate = video.maxFrameRate, rate <= 0 {
                throw PresetFieldError(field: "video.maxFrameRate", problem: "must be positive")
            }
            guard !video.encoderPreset.isEmpty else {
                throw PresetFieldError(field: "video.encoderPreset", problem: "must not be empty")
            }
            guard let audio else { throw PresetFieldError(field: "audio", problem: "is required for a video preset") }
            try Preset.validate(audio)
        case .audio:
            guard let audio else { throw PresetFieldError(field: "audio", problem: "is required for an audio preset") }
            if video != nil { throw PresetFieldError(field: "video", problem: "must be absent in an audio preset") }
            try Preset.validate(audio)
        case .ladder:
            guard let ladder else {
                throw PresetFieldError(field: "ladder", problem: "is required for a ladder preset")
            }
            if video != nil || audio != nil {
                throw PresetFieldError(
                    field: "video", problem: "a ladder preset has no video or audio settings (its rungs' presets do)")
            }
            guard (1...ReelExport.Ladder.maxRungs).contains(ladder.rungs.count) else {
                throw PresetFieldError(
                    field: "ladder.rungs", problem: "must name 1 to \(ReelExport.Ladder.maxRungs) video presets")
            }
            if let seconds = ladder.segmentDuration, !(1...60).contains(seconds) {
                throw PresetFieldError(field: "ladder.segmentDuration", problem: "must be between 1 and 60 seconds")
            }
            for name in ladder.manifests ?? [] where ReelExport.Ladder.Manifest(rawValue: name) == nil {
                throw PresetFieldError(field: "ladder.manifests", problem: "must list hls and/or dash, not '\(name)'")
            }
        case .passthrough:
            if video != nil || audio != nil {
                throw PresetFieldError(field: "video", problem: "a passthrough preset has no video or audio settings")
            }
        }
        guard !name.isEmpty else { throw PresetFieldError(field: "name", problem: "must not be empty") }
    }

    private static func validate(_ audio: Audio) throws(PresetFieldError) {
        guard audio.codec == "aac" else { throw PresetFieldError(field: "audio.codec", problem: "must be \"aac\"") }
        guard (8_000...512_000).contains(audio.bitrate) else {
            throw PresetFieldError(field: "audio.bitrate", problem: "must be between 8000 and 512000")
        }
        guard (1...2).contains(audio.maxChannels) else {
            throw PresetFieldError(field: "audio.maxChannels", problem: "must be 1 or 2")
        }
    }

    /// The output size for a source displayed at `width`×`height`: inside the box matched to the
    /// source's orientation, aspect kept as far as rounding to the size multiple allows, never larger
    /// than the source. (Where rounding moves the proportions by more than 1 %, the plan shapes the
    /// pixels to restore them: `ExportPlan.Video.pixelAspect`.)
    public func outputSize(forDisplayWidth width: Int, height: Int) -> (width: Int, height: Int) {
        let multiple = max(2, video?.sizeMultiple ?? 2)
        var boxWidth = Double(width)
        var boxHeight = Double(height)
        if let box = video?.box {
            let landscape = width >= height
            boxWidth = Double(landscape ? box[0] : box[1])
            boxHeight = Double(landscape ? box[1] : box[0])
        }
        let scale = min(1, boxWidth / Double(width), boxHeight / Double(height))
        func fit(_ value: Double, limit: Double) -> Int {
            let rounded = (value / Double(multiple)).rounded() * Double(multiple)
            let bounded = rounded <= limit ? rounded : (value / Double(multiple)).rounded(.down) * Double(multiple)
            return max(2, Int(bounded))
        }
        return (
            fit(Double(width) * scale, limit: min(boxWidth, Double(width))),
            fit(Double(height) * scale, limit: min(boxHeight, Double(height)))
        )
    }
}

/// A preset file problem: which field and what is wrong with it.
struct PresetFieldError: Error {
    var field: String
    var problem: String
}
