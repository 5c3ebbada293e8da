import Foundation
import ReelExport
import ReelMedia

/// `reel export --estimate` without `--json`: the plan as a few readable lines.
enum PlanPrinter {
    static func describe(_ plan: ExportPlan) -> String {
        var lines = ["\(plan.preset): \(plan.method.rawValue) (\(plan.decision.summary))"]
        var output = [plan.output.path ?? "-", plan.output.type.rawValue]
        if let width = plan.width, let height = plan.height { output.append("\(width)x\(height)") }
        if let rate = plan.frameRate { output.append(String(format: "%.2f fps", rate)) }
        output.append(String(format: "%.2f s", plan.durationSeconds))
        if let range = plan.timeRange {
            let clamped = plan.requestedTimeRange.map { $0.end != nil && $0.end != range.end } ?? false
            output.append(
                String(format: "from %.3f s to %.3f s", range.start, range.end ?? 0)
                    + (clamped ? " (asked \(plan.requestedTimeRange?.description ?? ""), clamped to the asset)" : ""))
        }
        if plan.output.networkOptimized { output.append("moov first") }
        lines.append("  output    " + output.joined(separator: ", "))
        if let video = plan.video {
            var facts = ["\(video.sourceCodec) \(size(video.sourceWidth, video.sourceHeight))"]
            if video.copied {
                facts.append("copied")
            } else {
                var encoding = [video.encoder ?? video.codec, video.encoderPreset ?? ""]
                if let crf = video.crf { encoding.append(String(format: "CRF %g", crf)) }
                if let cap = video.maxBitrate { encoding.append("at most \(rate(cap))") }
                if let profile = video.profile { encoding.append(profile) }
                encoding.append(video.pixelFormat ?? "")
                switch video.color {
                case .bt709, .copied: encoding.append("BT.709")
                case .keepSource:
                    encoding.append(
                        "source colours" + (video.colorTransfer.map { " (\($0))" } ?? "")
                            + (video.hdrMetadata != nil ? " with HDR10 metadata" : ""))
                case .toneMapped:
                    let from = video.toneMapping.map {
                        " from \($0.transfer.rawValue.uppercased()) (peak \(Int($0.peakLuminance)) cd/m²)"
                    }
                    encoding.append("tone-mapped to BT.709" + (from ?? ""))
                }
                if video.mirrored { encoding.append("mirrored") }
                if video.rotation != 0 { encoding.append("rotated \(video.rotation)°") }
                facts.append("→ " + encoding.filter { !$0.isEmpty }.joined(separator: " "))
            }
            lines.append("  video     " + facts.joined(separator: " "))
        }
        if let audio = plan.audio {
            var facts = [audio.sourceCodec, channels(audio.sourceChannels), hertz(audio.sourceSampleRate)]
            if audio.copied {
                facts.append("copied")
            } else {
                facts += ["→ AAC", audio.bitRate.map(rate) ?? "", channels(audio.channels), hertz(audio.sampleRate)]
            }
            lines.append("  audio     " + facts.filter { !$0.isEmpty }.joined(separator: " "))
        }
        let skipped = plan.streams.filter { $0.action == .skip }
        if !skipped.isEmpty {
            lines.append(
                "  skipped   "
                    + skipped.map { "\($0.index) (\($0.kind.rawValue) \($0.codec): \($0.reason ?? "not exported"))" }
                    .joined(separator: ", "))
        }
        let metadata = plan.metadata
        let list = { (keys: [String]) in keys.isEmpty ? "none" : keys.joined(separator: ", ") }
        lines.append(
            "  metadata  \(metadata.policy.rawValue) (\(metadata.written.count) keys; location: \(list(metadata.location)); device: \(list(metadata.device)); identifiers: \(list(metadata.identifiers)))"
        )
        if let quality = plan.quality { lines.append("  quality   " + describe(quality)) }
        lines.append(
            "  estimate  \(CLI.formatBytes(plan.estimatedBytes)) (\(plan.estimatedBytes) bytes\(estimateSource(plan)))")
        if let limit = plan.sizeLimit {
            lines.append("  limit     \(CLI.formatBytes(limit.bytes)) (\(limit.bytes) bytes): \(limit.summary)")
        }
        return lines.joined(separator: "\n")
    }

    /// How the estimate was found, as a clause after its bytes.
    static func estimateSource(_ plan: ExportPlan) -> String {
        let samples = plan.estimateSamples
        if let search = plan.quality?.search, plan.estimateMethod == .samples {
            return "; the quality search's \(search.samples) samples "
                + String(
                    format: "(%.1f s) at CRF %.1f, extrapolated to %.1f s", search.sampleSeconds, search.crf,
                    plan.durationSeconds)
        }
        switch plan.estimateMethod {
        case .copy?: return "; the source's bytes, no frame read"
        case .model?: return "; Reel's model of the encoder, no frame read"
        case .encoded?:
            return "; the whole export encoded"
                + (samples.map { String(format: ", took %.1f s", $0.elapsedSeconds) } ?? "")
        case .samples?:
            guard let samples else { return "; sample encodes" }
            return "; \(samples.count) sample encodes, "
                + String(format: "%.1f s in all, ", samples.seconds) + CLI.formatBytes(samples.bytes)
                + String(format: ", extrapolated to %.1f s; took %.1f s", plan.durationSeconds, samples.elapsedSeconds)
        case nil: return ""
        }
    }

    /// A plan's quality target: the search's answer and trials, or how it will be searched.
    static func describe(_ quality: QualityPlan) -> String {
        guard let search = quality.search else {
            return "\(quality.target): CRF searched on samples before the encode (first trial "
                + String(format: "%g", quality.presetCRF)
                + String(format: ", CRF %g to %g under the preset's cap)", quality.floorCRF, quality.ceilingCRF)
        }
        let trials = search.trials.map {
            String(format: "CRF %.1f ", $0.crf)
                + QualityTarget.format(quality.target.value(of: $0.score), metric: quality.target.metric)
        }
        return "\(quality.target): \(search.note); trials \(trials.joined(separator: ", "))"
            + String(format: "; searched in %.1f s", search.elapsedSeconds)
    }

    /// A result's quality: the CRF, the score expected and the score measured on the whole output.
    static func describe(_ quality: ExportSession.Result.Quality) -> String {
        let metric = quality.target.metric
        let measured = quality.score.map { QualityTarget.format($0, metric: metric) } ?? "not measured"
        var line =
            "quality \(quality.target): CRF " + String(format: "%.1f", quality.crf)
            + ", \(metric.rawValue) \(measured) measured on the whole output"
        if let frames = quality.measured?.frames { line += " (\(frames) frames)" }
        line += ", \(QualityTarget.format(quality.predictedScore, metric: metric)) expected from the samples"
        line += quality.met ? "" : "; the target is NOT met: \(quality.note)"
        return line
    }

    private static func size(_ width: Int?, _ height: Int?) -> String {
        guard let width, let height else { return "" }
        return "\(width)x\(height)"
    }

    private static func rate(_ bits: Int) -> String {
        bits >= 1_000_000 ? String(format: "%g Mb/s", Double(bits) / 1e6) : "\(bits / 1000) kb/s"
    }

    private static func channels(_ count: Int?) -> String { count.map { "\($0) ch" } ?? "" }

    private static func hertz(_ rate: Int?) -> String {
        rate.map { String(format: "%g kHz", Double($0) / 1000) } ?? ""
    }
}
