import Foundation

/// How an export is made to fit a file size (`fileLengthLimit`, `--max-size`), as the plan states it.
///
/// The whole duration is always kept. A re-encode keeps the preset's CRF and caps its VBV: the
/// maximum rate `M` and a one-second buffer are chosen so that `M` over the duration plus the part of
/// the buffer x264 may spend above it (it starts 90 % full) fits what the limit leaves after the
/// audio and the container, with 3 % to spare. The file is then at most what the preset makes, and
/// at most the limit. When `M` would give fewer bits per pixel than `floorBitsPerPixel`, the picture
/// is made smaller inside the preset's box, one rung at a time (short side 2160, 1440, 1080, 720,
/// 540, 480, 360, 270, 240, 180, 144), until it does not; below the smallest rung the limit is
/// refused before any work, with the smallest size that would do. Audio keeps the preset's rate
/// unless that is more than an eighth of the budget (then an eighth, not below 64 kb/s, 32 kb/s
/// mono). A copy (Passthrough) cannot be made smaller: a limit under its estimated size is refused,
/// and smart passthrough re-encodes instead. The session checks the file's size after the export and
/// re-encodes once at a corrected rate if it is still over.
public struct SizeLimit: Sendable, Codable, Equatable {
    /// The limit, in bytes.
    public var bytes: Int64
    /// The VBV maximum rate chosen for the video, in bits per second, and its buffer, in bits.
    public var videoMaxBitRate: Int?
    public var videoBufferSize: Int?
    /// The audio rate chosen, in bits per second.
    public var audioBitRate: Int?
    /// Bits per pixel per frame at `videoMaxBitRate` and the chosen size.
    public var bitsPerPixel: Double?
    /// The quality floor, in bits per pixel per frame, below which the picture is made smaller.
    public var floorBitsPerPixel: Double?
    /// The size the preset alone would have made, when the limit made the picture smaller.
    public var reducedFromWidth: Int?
    public var reducedFromHeight: Int?
    /// One line saying what was chosen.
    public var summary: String

    /// Bits per pixel per frame below which a picture is made smaller rather than starved: about
    /// where x264 `medium` output of ordinary footage starts to show blocks (1080p30 at 2.5 Mb/s,
    /// 720p30 at 1.1 Mb/s). HEVC needs about a quarter fewer.
    public static func floorBitsPerPixel(codec: String) -> Double { codec == "hevc" ? 0.03 : 0.04 }

    /// Short sides the picture steps down through.
    static let rungs = [2160, 1440, 1080, 720, 540, 480, 360, 270, 240, 180, 144]
    /// Share of the limit aimed at (the rest is margin for the encoder's overshoot).
    static let aim = 0.97
    /// Seconds of the maximum rate the VBV buffer holds.
    static let bufferSeconds = 1.0
    /// Share of the buffer x264 may spend above the maximum rate (`vbv-init` 0.9).
    static let bufferSpent = 0.9

    /// Reads `16MB`, `8 MiB`, `500k`, `1.5GB` or a number of bytes. Decimal units are powers of
    /// 1000 (MB = 1,000,000 bytes: a limit given in MB then also fits one meant in MiB), binary
    /// units powers of 1024. Nil when it cannot be read or is not positive.
    public static func parseBytes(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let number = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmed.dropFirst(number.count).trimmingCharacters(in: .whitespaces)
        guard let value = Double(number), value > 0 else { return nil }
        let scale: Double
        switch unit {
        case "", "b": scale = 1
        case "k", "kb": scale = 1e3
        case "m", "mb": scale = 1e6
        case "g", "gb": scale = 1e9
        case "kib": scale = 1024
        case "mib": scale = 1024 * 1024
        case "gib": scale = 1024 * 1024 * 1024
        default: return nil
        }
        let bytes = (value * scale).rounded(.down)
        return bytes >= 1 && bytes < 9e18 ? Int64(bytes) : nil
    }

    /// `16 MB`, `850 KB`: decimal, one decimal place when short.
    static func describe(_ bytes: Double) -> String {
        if bytes >= 1e9 { return String(format: "%.2f GB", bytes / 1e9) }
        if bytes >= 1e6 { return String(format: bytes >= 1e8 ? "%.0f MB" : "%.1f MB", bytes / 1e6) }
        return String(format: "%.0f KB", bytes / 1e3)
    }
}

extension ExportPlanner {
    /// Makes a planned export fit `limit` bytes (see `SizeLimit`), or throws `limit-exceeded` with
    /// the smallest feasible size, or `incompatible-preset` for a copy that cannot fit.
    static func fit(_ plan: inout ExportPlan, limit: Int64, asset: Asset, preset: Preset) throws(ExportError) {
        let seconds = plan.durationSeconds
        guard seconds > 0 else { return }
        let limitText = SizeLimit.describe(Double(limit))
        if plan.method == .passthrough {
            if plan.estimatedBytes > limit {
                throw ExportError(
                    .incompatiblePreset,
                    "Passthrough copies the streams as they are, about \(SizeLimit.describe(Double(plan.estimatedBytes))), which the \(limitText) limit cannot hold; use a re-encoding preset to fit it"
                )
            }
            plan.sizeLimit = SizeLimit(
                bytes: limit, summary: "the copy is expected to be \(SizeLimit.describe(Double(plan.estimatedBytes)))")
            return
        }
        let frames = (plan.video?.frameRate ?? 30) * seconds
        let audioPackets = Double(plan.audio?.sampleRate ?? 48_000) / 1024 * seconds
        let container =
            SizeEstimate.Model.containerBytes + SizeEstimate.Model.bytesPerFrame * frames
            + SizeEstimate.Model.bytesPerAudioPacket * audioPackets
        let budgetBits = (Double(limit) * SizeLimit.aim - container) * 8
        var limitPlan = SizeLimit(bytes: limit, summary: "")
        // Audio: the preset's rate unless that is more than an eighth of the budget.
        var audioRate = 0
        var audioFloor = 0
        if var audio = plan.audio, let rate = audio.bitRate {
            audioFloor = (audio.channels ?? 2) == 1 ? 32_000 : 64_000
            audioRate = min(rate, max(Int(budgetBits / seconds / 8), audioFloor))
            if plan.video == nil {
                audioRate = min(rate, Int(budgetBits / seconds))
                if audioRate < audioFloor {
                    let smallest = (Double(audioFloor) * seconds / 8 + container) / SizeLimit.aim
                    throw ExportError(
                        .limitExceeded,
                        "the \(limitText) limit cannot hold \(durationText(seconds)) of audio at \(audioFloor / 1000) kb/s; the smallest feasible size is \(SizeLimit.describe(smallest.rounded(.up)))"
                    )
                }
            }
            audio.bitRate = audioRate
            plan.audio = audio
            limitPlan.audioBitRate = audioRate
        }
        guard var video = plan.video else {
            limitPlan.summary = "audio at \(audioRate / 1000) kb/s fits \(limitText)"
            plan.sizeLimit = limitPlan
            plan.estimatedBytes = min(SizeEstimate.bytes(for: plan, asset: asset), limit)
            return
        }
        let videoBits = budgetBits - Double(audioRate) * seconds
        let fps = video.frameRate ?? 30
        let floor = SizeLimit.floorBitsPerPixel(codec: video.codec)
        let span = seconds + SizeLimit.bufferSeconds * SizeLimit.bufferSpent
        let maxRate = videoBits / span
        // The sizes to try: the preset's, then each smaller rung inside it.
        let (width, height) = (video.width, video.height)
        let short = min(width, height)
        var sizes = [(width, height)]
        for rung in SizeLimit.rungs where rung < short {
            let scale = Double(rung) / Double(short)
            sizes.append((even(Double(width) * scale), even(Double(height) * scale)))
        }
        guard let chosen = sizes.first(where: { maxRate / (Double($0.0 * $0.1) * fps) >= floor }) else {
            let smallest = sizes.last ?? (width, height)
            let bytes =
                (floor * Double(smallest.0 * smallest.1) * fps * span / 8 + Double(audioFloor) * seconds / 8
                    + container) / SizeLimit.aim
            throw ExportError(
                .limitExceeded,
                "the \(limitText) limit cannot hold \(durationText(seconds)) of video at a watchable quality; the smallest feasible size is \(SizeLimit.describe(bytes.rounded(.up))) (\(smallest.0)x\(smallest.1) at \(floor) bits per pixel, audio at \(audioFloor / 1000) kb/s)"
            )
        }
        if chosen != (width, height) {
            limitPlan.reducedFromWidth = width
            limitPlan.reducedFromHeight = height
            video.width = chosen.0
            video.height = chosen.1
            // Rounding the smaller picture to even sizes moves its proportions: shape its pixels anew.
            if let sourceWidth = video.sourceWidth, let sourceHeight = video.sourceHeight {
                video.pixelAspect = ExportPlanner.pixelAspect(
                    display: (sourceWidth, sourceHeight), picture: (chosen.0, chosen.1))
            }
        }
        let rate = Int(min(maxRate, Double(video.maxBitrate ?? Int.max)))
        let buffer = Int(min(Double(rate) * SizeLimit.bufferSeconds, Double(video.bufferSize ?? Int.max)))
        video.maxBitrate = rate
        video.bufferSize = buffer
        plan.video = video
        plan.width = video.width
        plan.height = video.height
        let bpp = Double(rate) / (Double(video.width * video.height) * fps)
        limitPlan.videoMaxBitRate = rate
        limitPlan.videoBufferSize = buffer
        limitPlan.bitsPerPixel = (bpp * 10_000).rounded() / 10_000
        limitPlan.floorBitsPerPixel = floor
        limitPlan.summary =
            "CRF \(video.crf.map { String(format: "%g", $0) } ?? "?") capped at \(rate / 1000) kb/s (\(String(format: "%.3f", bpp)) bits per pixel)"
            + (chosen != (width, height) ? ", picture made \(video.width)x\(video.height) from \(width)x\(height)" : "")
            + (audioRate > 0 ? ", audio at \(audioRate / 1000) kb/s" : "") + ", to fit \(limitText)"
        plan.sizeLimit = limitPlan
        plan.estimatedBytes = min(SizeEstimate.bytes(for: plan, asset: asset), limit)
    }

    private static func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }

    private static func durationText(_ seconds: Double) -> String {
        if seconds >= 3600 {
            return "\(Int(seconds) / 3600) h \(Int(seconds) % 3600 / 60) min"
        }
        if seconds >= 60 { return "\(Int(seconds) / 60) min \(Int(seconds) % 60) s" }
        return String(format: "%.1f s", seconds)
    }
}

extension ExportPlan {
    /// The plan for a second encode after the first came out at `bytes`, over the limit: the video's
    /// maximum rate (or the rate it really spent, when lower) scaled by how far the video overshot
    /// what the limit leaves it, less 3 % more.
    /// Nil for a copy, or when the audio and container alone fill the limit.
    func corrected(forBytes bytes: Int64) -> ExportPlan? {
        guard method == .transcode, var limit = sizeLimit, var video, let rate = video.maxBitrate else { return nil }
        let seconds = durationSeconds
        let frames = (video.frameRate ?? 30) * seconds
        let others =
            Double(audio?.bitRate ?? 0) * seconds / 8 + SizeEstimate.Model.containerBytes
            + SizeEstimate.Model.bytesPerFrame * frames
        let target = Double(limit.bytes) * SizeLimit.aim - others
        let spent = Double(bytes) - others
        guard target > 0, spent > 0 else { return nil }
        // The rate the first encode really spent, when it stayed under its cap, is what to scale.
        let spentRate = spent * 8 / max(seconds, 0.001)
        let corrected = Int(min(Double(rate), spentRate) * min(1, target / spent) * SizeLimit.aim)
        video.maxBitrate = corrected
        video.bufferSize = Int(Double(corrected) * SizeLimit.bufferSeconds)
        var plan = self
        plan.video = video
        limit.videoMaxBitRate = corrected
        limit.videoBufferSize = video.bufferSize
        limit.summary += "; re-encoded at \(corrected / 1000) kb/s after a first pass of \(bytes) bytes"
        plan.sizeLimit = limit
        return plan
    }
}
