import Foundation

/// How large an export's file will be (`ExportPlan.estimatedBytes`), from the plan and the source's
/// probed facts, without reading a frame.
///
/// - A copy (Passthrough, smart passthrough) is the source's bytes, less the streams left out, scaled
///   by the share of the duration kept, plus the room the remux reserves for a front moov.
/// - A re-encode is video + audio + container. Audio is the AAC bit rate over the duration. Video is a
///   model of x264/x265 at constant rate factor, in bits per output pixel per frame (bpp):
///
///       ln bpp = c0 + c1 ln s + c2 ln r + c3 ln(P / 1280·720) + c4 ln r · ln s + e(preset) + h(codec)
///                + u [r = 1] + b [Baseline source] − (crf − 23) · ln 2 / 6
///
///   where `s` is the source's video bpp (its bit rate over its displayed pixels and frames, scaled by
///   how many bits H.264 would spend on what the source's codec stores: the content's complexity),
///   `r` the output's share of the source's pixels, `P` the output's pixels, `e` the encoder preset's
///   term, `h` HEVC's or AV1's (SVT-AV1 at its own CRF, measured, not fitted), `u` a step for an
///   encode at the source's own size (no scaler to smooth away
///   detail and coding noise) and `b` one for an H.264 Baseline source (whose bit rate overstates
///   the content). Halving the bits every 6 CRF is x264's rate-factor rule; the other terms
///   are fitted. The total is capped by the VBV: the maximum rate over the duration plus the part of
///   the buffer x264 spends (it starts 90 % full and ends about a third full).
///
/// Fitted (least squares on ln bpp) on 104 of 136 encodes by Reel of 4-second clips of four kinds of
/// content (lavfi `testsrc2`, `mandelbrot` with grain, a still picture, `noise`), each 1920x1080 and
/// 640x360 and each encoded two ways (x264 veryfast CRF 16; ultrafast CRF 23), under every shipped
/// video preset. Noise and capped encodes are left out of the fit: downscaling averages noise away,
/// so a noisy source made smaller is overestimated (up to 9x), while one kept near its size meets the
/// VBV cap, which the estimate gives within 7 %. `Scripts/estimate-calibration` repeats the
/// measurement and the fit; README ("Size estimates") gives the errors.
enum SizeEstimate {
    static func bytes(for plan: ExportPlan, asset: Asset) -> Int64 {
        switch plan.method {
        case .passthrough, .smartPassthrough: copied(plan, asset: asset)
        case .transcode: encoded(plan, asset: asset)
        }
    }

    /// How `bytes(for:asset:)` arrives at its figure for `plan`.
    static func method(for plan: ExportPlan) -> ExportPlan.EstimateMethod {
        plan.method == .transcode ? .model : .copy
    }

    /// A copy: the source's bytes, less the streams left out, scaled by the share of the duration kept;
    /// plus, for a network-optimised file, the room the remux reserves in front for the moov (which
    /// replaces the source's own index, about 12 bytes a sample).
    static func copied(_ plan: ExportPlan, asset: Asset) -> Int64 {
        let seconds = asset.duration
        // A Passthrough cut copies from the keyframe before its start (up to a group of pictures more).
        let leadIn = plan.copiedFromSeconds.map { max(0, (plan.timeRange?.start ?? 0) - $0) } ?? 0
        let share = seconds > 0 ? min(1, (plan.durationSeconds + leadIn) / seconds) : 1
        var bytes = Double(asset.fileBytes)
        for stream in plan.streams where stream.action == .skip {
            guard let track = asset.tracks.first(where: { $0.index == stream.index }) else { continue }
            bytes -= streamBytes(track, assetSeconds: seconds) ?? 0
        }
        bytes *= share
        if plan.output.networkOptimized {
            let copied = plan.streams.filter { $0.action == .copy }.compactMap { stream in
                asset.tracks.first { $0.index == stream.index }
            }
            let samples = copied.map { packetCount(of: $0, assetSeconds: seconds) }.reduce(0, +)
            bytes += Double(moovReservation(streams: copied, samples: samples, metadata: plan.metadata.written))
            bytes -= 12 * samples * share
        }
        return Int64(max(0, bytes).rounded())
    }

    /// The room a remux reserves for the moov: ReelMedia's `RemuxJob.estimateMoovBytes`, from the same
    /// facts (16 KiB, the metadata, then 2 KiB and 45 bytes a sample per stream).
    static func moovReservation(streams: [AssetTrack], samples: Double, metadata: [String: String]) -> Int {
        let base = 16_384 + metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 64 }
        return min(base + 2_048 * streams.count + Int(samples * 1.25 * 36), 256 << 20)
    }

    /// How many packets a stream holds.
    static func packetCount(of track: AssetTrack, assetSeconds: Double) -> Double {
        if let count = track.frameCount, count > 0 { return Double(count) }
        let seconds = max(0, track.durationSeconds ?? assetSeconds)
        switch track.kind {
        case .video: return seconds * min(track.frameRate?.value ?? 60, 240)
        case .audio: return seconds * Double(max(track.sampleRate ?? 48_000, 8_000)) / 1024
        default: return seconds * 10
        }
    }

    /// Bytes of one source stream, when its bit rate is known.
    static func streamBytes(_ track: AssetTrack, assetSeconds: Double) -> Double? {
        guard let rate = track.bitRate else { return nil }
        return Double(rate) * (track.durationSeconds ?? assetSeconds) / 8
    }

    /// A re-encode: video (the model above), audio at its bit rate, and the container.
    static func encoded(_ plan: ExportPlan, asset: Asset) -> Int64 {
        let seconds = plan.durationSeconds
        var bits = 0.0
        var frames = 0.0
        if let video = plan.video, let crf = video.crf {
            frames = (video.frameRate ?? 30) * seconds
            bits += videoBits(video, crf: crf, seconds: seconds, frames: frames, asset: asset)
        }
        var packets = 0.0
        if let audio = plan.audio, let rate = audio.bitRate {
            // FFmpeg's AAC encoder spends its target rate within a percent.
            bits += Double(rate) * seconds
            packets = Double(audio.sampleRate ?? 48_000) / 1024 * seconds
        }
        let container = Model.containerBytes + Model.bytesPerFrame * frames + Model.bytesPerAudioPacket * packets
        return Int64((bits / 8 + container).rounded())
    }

    static func videoBits(_ video: ExportPlan.Video, crf: Double, seconds: Double, frames: Double, asset: Asset)
        -> Double
    {
        let pixels = Double(video.width * video.height)
        let sourcePixels = Double(max(1, (video.sourceWidth ?? video.width) * (video.sourceHeight ?? video.height)))
        let sourceRate = video.sourceFrameRate ?? video.frameRate ?? 30
        let sourceBits = sourceVideoBitRate(stream: video.stream, asset: asset)
        let complexity = max(
            Model.minimumSourceBPP,
            sourceBits * Model.h264Equivalent(video.sourceCodec) / (sourcePixels * max(1, sourceRate)))
        let s = log(complexity)
        let r = log(min(1, pixels / sourcePixels))
        var lnBPP =
            Model.c0 + Model.c1 * s + Model.c2 * r + Model.c3 * log(pixels / (1280 * 720)) + Model.c4 * r * s
            - (crf - 23) * log(2) / 6
        if video.codec != "av1" { lnBPP += Model.encoderPresetTerm(video.encoderPreset ?? "medium") }
        if video.codec == "hevc" { lnBPP += Model.hevcTerm }
        if video.codec == "av1" { lnBPP += Model.av1Term }
        if pixels >= sourcePixels { lnBPP += Model.unscaledTerm }
        let profile = asset.tracks.first { $0.index == video.stream }?.profile
        if video.sourceCodec == "h264", Model.isBaseline(profile) { lnBPP += Model.baselineSourceTerm }
        var bits = exp(lnBPP) * pixels * frames
        if let cap = video.maxBitrate {
            bits = min(bits, Double(cap) * seconds + Model.vbvBufferSpent * Double(video.bufferSize ?? cap))
        }
        return bits
    }

    /// The source video's bits per second: its stream's bit rate, else the file's less its other
    /// streams (an unknown audio stream counted at 128 kb/s).
    static func sourceVideoBitRate(stream index: Int, asset: Asset) -> Double {
        if let rate = asset.tracks.first(where: { $0.index == index })?.bitRate { return Double(rate) }
        let total =
            asset.bitRate.map(Double.init) ?? (asset.duration > 0 ? Double(asset.fileBytes) * 8 / asset.duration : 0)
        let others = asset.tracks.filter { $0.index != index && $0.kind != .video }.reduce(0.0) { sum, track in
            sum + Double(track.bitRate ?? (track.kind == .audio ? 128_000 : 0))
        }
        return max(0, total - others)
    }

    /// The fitted numbers (see the type's comment and `Scripts/estimate-calibration`).
    enum Model {
        static let c0 = -1.168
        static let c1 = 0.872
        static let c2 = 0.369
        static let c3 = -0.062
        static let c4 = 0.123
        static let hevcTerm = 0.012
        /// SVT-AV1 (preset 8) at its own CRF, on the x264 model at the same number (its bits also halve
        /// about every 6 CRF: 0.10-0.13 a step from CRF 24 to 40 on a grainy Mandelbrot zoom). The
        /// mean of ln(real / model) over 8 exports of 4 s clips (testsrc2 and a grainy Mandelbrot zoom,
        /// 1920x1080 and 640x360, x264 veryfast CRF 16) under AV1_1280x720 and AV1HighestQuality;
        /// measured, not fitted with the other terms. Those exports then come within −29 to +29 %;
        /// a still picture comes out 35-64 % low (SizeEstimates.md).
        static let av1Term = 0.80
        /// An encode at the source's own size keeps all its detail and its coding noise, which any
        /// scaler's low-pass filter removes: a step at `r` = 1 that the smooth `c2 ln r` term misses
        /// (without it, same-size encodes of camera-quality sources were 15-21 % low, and the 20 s
        /// 1080p benchmark clip under 1920x1080 28 % low).
        static let unscaledTerm = 0.255
        /// An H.264 Baseline source (CAVLC, no B-frames: x264 ultrafast, webcams, screen recorders)
        /// spends more bits on the same picture than a High-profile one, so its bit rate overstates
        /// the content's complexity.
        static let baselineSourceTerm = -0.156
        /// A source cannot be simpler than this (bpp); an empty or broken bit rate would otherwise
        /// predict nothing.
        static let minimumSourceBPP = 0.002
        /// Share of the VBV buffer an encode spends above the maximum rate: x264's buffer starts 90 %
        /// full (`vbv-init`); the capped noise encodes spent 0.47-0.64 of it (fitted: 0.55).
        static let vbvBufferSpent = 0.55
        /// ftyp, moov headers, the encoder's SEI; then each sample's table entries.
        static let containerBytes = 2500.0
        static let bytesPerFrame = 20.0
        static let bytesPerAudioPacket = 8.0

        /// Fitted for veryfast, fast and medium (the shipped presets); the others follow x264's
        /// documented trend and are not calibrated.
        static func encoderPresetTerm(_ preset: String) -> Double {
            switch preset.lowercased() {
            case "ultrafast": 0.6
            case "superfast": 0.4
            case "veryfast": 0.253
            case "faster": 0.1
            case "fast": 0.059
            case "medium": 0
            case "slow": -0.03
            case "slower": -0.06
            case "veryslow", "placebo": -0.08
            default: 0
            }
        }

        /// Whether an H.264 profile name is Baseline or Constrained Baseline.
        static func isBaseline(_ profile: String?) -> Bool { profile?.contains("Baseline") == true }

        /// How many bits H.264 spends for one bit of each codec at a similar quality (more for newer
        /// codecs, less for intra-only and older ones); literature figures, not calibrated here.
        static func h264Equivalent(_ codec: String) -> Double {
            switch codec {
            case "h264": 1
            case "hevc", "vp9": 1.5
            case "av1": 1.8
            case "vp8", "theora": 0.9
            case "mpeg4", "msmpeg4v3", "h263": 0.8
            case "mpeg2video", "mpeg1video": 0.6
            case "mjpeg", "jpeg2000": 0.25
            case "prores", "dnxhd", "cfhd": 0.15
            case "rawvideo", "ffv1", "huffyuv", "ffvhuff", "utvideo", "v210", "qtrle", "png": 0.08
            default: 1
            }
        }
    }
}
