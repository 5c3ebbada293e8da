import Foundation
import ReelMedia

/// A per-title ladder's search (`--quality` with a ladder): the target, and each rung's answer.
public struct LadderQuality: Sendable, Codable, Equatable {
    /// One rung's answer.
    public struct Rung: Sendable, Codable, Equatable {
        /// `WxH`.
        public var size: String
        /// The CRF chosen for it (the rung's encode used it when `kept`).
        public var crf: Double
        /// The samples' score expected at `crf`.
        public var predictedScore: Double
        /// Whether the target is met at `crf` (false: not within the rung's bit-rate cap).
        public var met: Bool
        /// The smaller rung kept below it that it was compared with (`WxH`), and that rung's score
        /// scaled up to this rung's size; nil for the smallest rung and for SDR rungs.
        public var comparedWith: String?
        public var comparedScore: Double?
        /// Whether the rung is in the ladder: false when it adds no more than 0.002 SSIM (0.2 dB
        /// PSNR) over `comparedWith` scaled up.
        public var kept: Bool
        /// One line on the rung (`ssim 0.9850 at CRF 27.3; 640x360 scaled up: 0.9702`).
        public var note: String
    }
    public var target: QualityTarget
    /// The rungs, largest first, kept and dropped.
    public var rungs: [Rung]
    /// The H.264 SDR rungs beside HDR ones, searched on their own (kept in the boxes the HDR rungs
    /// kept); empty for other ladders.
    public var sdrRungs: [Rung]
    /// Wall time of the searches, decoding the samples included.
    public var searchSeconds: Double
}

extension ExportSession {
    /// The rungs of a ladder with a quality target, per title: every rung's CRF searched on samples
    /// of the source (`QualitySearch.ladder`, under the stall watchdog, reported as the `searching`
    /// phase), and a rung that adds no quality over the smaller one kept below it left out, with its
    /// SDR twin. Returns the indices kept (into `rungs`, largest first) and what was found.
    func searchedLadder(
        _ planned: PlannedLadder, rungs: inout [VideoEncoding], sdrRungs: inout [VideoEncoding],
        sizes: [Ladder.Size], target: QualityTarget, started: ContinuousClock.Instant
    ) throws(ExportError) -> (kept: [Int], quality: LadderQuality) {
        let began = ContinuousClock.now
        let slack = QualityPlan.slack(target)
        var transcode = planned.transcode
        transcode.threads = codecThreads
        let share = sdrRungs.isEmpty ? 1.0 : 0.7
        func search(
            _ plan: TranscodePlan, _ encodings: [VideoEncoding], compare: Bool, progress: ClosedRange<Double>
        ) throws(ExportError) -> [QualitySearch.Rung] {
            try watched { [self, cancelFlag] heartbeat throws(MediaError) in
                try QualitySearch.ladder(
                    plan, rungs: encodings, target: target,
                    bounds: QualityPlan.bounds(codec: planned.video.encoding.codec.rawValue),
                    slack: compare ? slack : nil, cancel: cancelFlag, heartbeat: heartbeat
                ) { [self] fraction in
                    let overall = progress.lowerBound + (progress.upperBound - progress.lowerBound) * fraction
                    publish(
                        TranscodeProgress(phase: .searching, fraction: overall, frames: 0, mediaSeconds: 0),
                        started: started)
                }
            }
        }
        let found = try search(transcode, rungs, compare: true, progress: 0...share)
        let kept = found.indices.filter { found[$0].addsQuality }
        for index in rungs.indices { rungs[index].crf = found[index].outcome.crf }
        var sdrFound: [QualitySearch.Rung] = []
        if let sdr = planned.sdr, !sdrRungs.isEmpty {
            var plan = transcode
            plan.mode = .transcode(video: sdr, audio: nil)
            let searched = kept.map { sdrRungs[$0] }
            sdrFound = try search(plan, searched, compare: false, progress: share...1)
            for (position, index) in kept.enumerated() { sdrRungs[index].crf = sdrFound[position].outcome.crf }
        }
        func described(_ rung: QualitySearch.Rung, size: Ladder.Size, kept: Bool) -> LadderQuality.Rung {
            let metric = target.metric.rawValue
            let crf = String(format: "%.1f", rung.outcome.crf)
            var note = "\(metric) \(QualityTarget.format(rung.outcome.predicted, metric: target.metric)) at CRF \(crf)"
            if !rung.outcome.met { note += " (the target is not met within the rung's cap)" }
            let below = rung.below.map { sizes[$0].description }
            if let below, let score = rung.belowScore {
                let scaled = QualityTarget.format(score, metric: target.metric)
                note +=
                    kept
                    ? "; \(below) scaled up: \(scaled)"
                    : "; dropped: \(below) scaled up scores \(scaled), and this rung adds no more than \(QualityTarget.format(slack, metric: target.metric)) over it"
            }
            return LadderQuality.Rung(
                size: size.description, crf: rung.outcome.crf, predictedScore: rung.outcome.predicted,
                met: rung.outcome.met, comparedWith: below, comparedScore: rung.belowScore, kept: kept, note: note)
        }
        let quality = LadderQuality(
            target: target,
            rungs: found.indices.map { described(found[$0], size: sizes[$0], kept: kept.contains($0)) },
            sdrRungs: kept.indices.compactMap { position in
                sdrFound.indices.contains(position)
                    ? described(sdrFound[position], size: sizes[kept[position]], kept: true) : nil
            },
            searchSeconds: (ContinuousClock.now - began) / .seconds(1))
        return (kept, quality)
    }
}
