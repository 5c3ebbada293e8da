internal import CFFmpeg
internal import CFFmpegShim
import Foundation

/// A picture quality to reach (`--quality ssim:0.985`, `psnr:42`): the metric and the score the
/// encode must keep, measured against the source as the export scales it.
public struct QualityTarget: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    public enum Metric: String, Sendable, Codable, CaseIterable {
        /// SSIM over luma and chroma, weighted by their samples (FFmpeg's `ssim` filter's "All").
        case ssim
        /// PSNR in dB from the plane-weighted mean squared error (FFmpeg's `psnr` filter's average).
        case psnr
    }

    public var metric: Metric
    public var value: Double

    public init(metric: Metric, value: Double) {
        self.metric = metric
        self.value = value
    }

    /// The range a target's value must lie in: an SSIM short of 1 (a lossless target is not a
    /// target), a PSNR a lossy encode can reach.
    public static func accepted(_ metric: Metric) -> ClosedRange<Double> {
        metric == .ssim ? 0.5...0.9995 : 20...70
    }

    /// Reads `ssim:0.985` or `psnr:42`; nil when it is neither or out of range (`accepted`).
    public init?(_ text: String) {
        let parts = text.lowercased().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let metric = Metric(rawValue: String(parts[0])),
            let value = Double(parts[1]), value.isFinite, QualityTarget.accepted(metric).contains(value)
        else { return nil }
        self.init(metric: metric, value: value)
    }

    /// `ssim:0.985`, `psnr:42`.
    public var description: String {
        metric.rawValue + ":" + QualityTarget.format(value, metric: metric)
    }

    /// A score of this metric as the target is written: SSIM with up to four decimals, PSNR two.
    public static func format(_ value: Double, metric: Metric) -> String {
        var text = String(format: metric == .ssim ? "%.4f" : "%.2f", value)
        while text.contains("."), text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// The score's value in this target's metric.
    public func value(of score: QualityScore) -> Double {
        metric == .ssim ? score.ssim : score.psnr
    }

    public init(from decoder: any Swift.Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let target = QualityTarget(text) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription: "'\(text)' is not a quality target (ssim:0.5-0.9995 or psnr:20-70)"))
        }
        self = target
    }

    public func encode(to encoder: any Swift.Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// How close encoded pictures are to their references, over the frames compared: FFmpeg's `ssim`
/// filter's figures (per plane and "All") and its `psnr` filter's average, computed the same way
/// (`quality.c`), so a check with ffmpeg's filters on the same pictures gives the same numbers.
public struct QualityScore: Sendable, Equatable, Codable {
    /// SSIM of the planes weighted by their samples (4:1:1 for 4:2:0).
    public var ssim: Double
    public var ssimY: Double
    public var ssimU: Double
    public var ssimV: Double
    /// PSNR in dB of the frames' mean plane-weighted squared error; 100 for identical pictures.
    public var psnr: Double
    /// Frames compared.
    public var frames: Int

    public init(ssim: Double, ssimY: Double, ssimU: Double, ssimV: Double, psnr: Double, frames: Int) {
        self.ssim = ssim
        self.ssimY = ssimY
        self.ssimU = ssimU
        self.ssimV = ssimV
        self.psnr = psnr
        self.frames = frames
    }
}

/// Adds up per-frame scores (`reel_quality_compare`) into a `QualityScore`. One thread at a time.
final class QualityMeter {
    private var ssim = [0.0, 0.0, 0.0]
    private var ssimAll = 0.0
    private var mse = 0.0
    private var peak = 255.0
    private(set) var frames = 0
    private var scratch: UnsafeMutableRawPointer?
    private var scratchWidth = -1

    deinit { scratch?.deallocate() }

    /// Compares an encoded picture with its reference (both 4:2:0, 8- or 10-bit, one size).
    func add(_ encoded: UnsafePointer<AVFrame>, reference: UnsafePointer<AVFrame>) throws(MediaError) {
        let width = Int(reference.pointee.width)
        if width != scratchWidth {
            scratch?.deallocate()
            scratch = UnsafeMutableRawPointer.allocate(
                byteCount: max(16, reel_quality_scratch_size(Int32(width))), alignment: 64)
            scratchWidth = width
        }
        var score = reel_quality_score()
        let code = reel_quality_compare(encoded, reference, scratch, &score)
        guard code >= 0 else {
            throw MediaError(
                kind: .internalFailure, call: "reel_quality_compare",
                message:
                    "cannot compare an encoded picture with its reference (\(encoded.pointee.width)x\(encoded.pointee.height) format \(encoded.pointee.format) against \(reference.pointee.width)x\(reference.pointee.height) format \(reference.pointee.format))"
            )
        }
        // The C arrays come in as tuples: three planes, read without an allocation per frame.
        let planes = (score.ssim.0, score.ssim.1, score.ssim.2)
        let weights = (score.weight.0, score.weight.1, score.weight.2)
        ssim[0] += planes.0
        ssim[1] += planes.1
        ssim[2] += planes.2
        ssimAll += planes.0 * weights.0 + planes.1 * weights.1 + planes.2 * weights.2
        mse += score.mse.0 * weights.0 + score.mse.1 * weights.1 + score.mse.2 * weights.2
        peak = reference.pointee.format == AV_PIX_FMT_YUV420P10LE.rawValue ? 1023 : 255
        frames += 1
    }

    /// The frames' score; nil before the first frame.
    var score: QualityScore? {
        guard frames > 0 else { return nil }
        let count = Double(frames)
        let meanError = mse / count
        let psnr = meanError > 0 ? min(100, 10 * log10(peak * peak / meanError)) : 100
        return QualityScore(
            ssim: ssimAll / count, ssimY: ssim[0] / count, ssimU: ssim[1] / count, ssimV: ssim[2] / count, psnr: psnr,
            frames: frames)
    }
}
