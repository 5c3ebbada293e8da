import Foundation
public import ReelMedia

/// How an export meets a quality target (`--quality ssim:0.985`, `ExportSession.qualityTarget`, a
/// preset's `target`): the CRF is searched on samples of the export before it is encoded
/// (`QualitySearch`) instead of taken from the preset. `determineCompatibility()` states the target
/// and the bounds; `measuredPlan()` and the export itself fill in the search's answer.
public struct QualityPlan: Sendable, Codable, Equatable {
    public var target: QualityTarget
    /// The preset's CRF: the search's first trial, and what a plan without a search shows.
    public var presetCRF: Double
    /// The CRFs the search may choose between: the floor (the most bits it will spend) and the
    /// ceiling. The preset's bit-rate cap holds at every CRF.
    public var floorCRF: Double
    public var ceilingCRF: Double
    /// The search's answer; nil until it ran.
    public var search: Search?

    /// What the search found (`QualitySearch.Outcome`).
    public struct Search: Sendable, Codable, Equatable {
        /// The CRF chosen (also the plan's `video.crf`).
        public var crf: Double
        /// The samples' score expected at `crf`.
        public var predictedScore: Double
        /// Whether the target is met at `crf`. False: even the floor, under the preset's bit-rate
        /// cap, falls short, and the export is encoded at the floor (`note` says so).
        public var met: Bool
        /// One line on the outcome (`ssim 0.9850 at CRF 26.3 (3 trials on 4 samples, 2.1 s)`).
        public var note: String
        /// Samples encoded per trial: windows, their frames and seconds.
        public var samples: Int
        public var sampleFrames: Int
        public var sampleSeconds: Double
        public var trials: [QualitySearch.Trial]
        /// Wall time of the search, decoding the samples included.
        public var elapsedSeconds: Double
    }

    /// Why a quality target and a size limit are refused together: both would choose the rate.
    static let withSizeLimit = ExportError(
        .invalidArgument,
        "a quality target and a size limit cannot both choose the bit rate; give --quality or --max-size")

    /// The smallest difference in score that counts: 0.002 SSIM, 0.2 dB PSNR. A whole output this
    /// far under its target still met it; a ladder rung no more than this above the rung below it,
    /// scaled up, adds nothing and is left out.
    static func slack(_ target: QualityTarget) -> Double { target.metric == .ssim ? 0.002 : 0.2 }

    /// The CRF range a search covers for `codec`: x264 and x265 both from 10 (beyond which the
    /// bits buy nothing a viewer sees) to 45; SVT-AV1, whose scale runs to 63, from 10 to 55.
    static func bounds(codec: String) -> QualitySearch.Bounds {
        QualitySearch.Bounds(floor: 10, ceiling: codec == "av1" ? 55 : 45)
    }
}

extension ExportPlan {
    /// Makes the plan meet `target`: set on a re-encode of video, and on a smart passthrough (the
    /// search then decides between the copy and a smaller re-encode: `ExportSession`'s
    /// `searchedQuality`); nil otherwise (Passthrough keeps the source's pictures; audio has no
    /// target).
    mutating func aim(at target: QualityTarget?, preset: Preset) {
        let crf: Double?
        switch method {
        case .transcode: crf = video?.copied == false ? video?.crf : nil
        case .smartPassthrough: crf = video != nil ? preset.video?.crf : nil
        case .passthrough: crf = nil
        }
        guard let target, let crf, let video else {
            quality = nil
            return
        }
        let bounds = QualityPlan.bounds(codec: preset.video?.codec.rawValue ?? video.codec)
        quality = QualityPlan(
            target: target, presetCRF: crf, floorCRF: bounds.floor, ceilingCRF: bounds.ceiling, search: nil)
    }

    /// The plan with the search's answer: its CRF, its size predicted from the samples' bytes at
    /// that CRF, and the method and figures in `quality.search`.
    func searched(_ outcome: QualitySearch.Outcome) -> ExportPlan {
        guard var quality, var video else { return self }
        var plan = self
        video.crf = outcome.crf
        plan.video = video
        let score = QualityTarget.format(outcome.predicted, metric: quality.target.metric)
        let method =
            "\(outcome.trials.count) \(outcome.trials.count == 1 ? "trial" : "trials") on \(outcome.windows) \(outcome.windows == 1 ? "sample" : "samples")"
        let crf = String(format: "%.1f", outcome.crf)
        let note: String
        if outcome.met {
            note = "\(quality.target.metric.rawValue) \(score) at CRF \(crf) (\(method))"
        } else {
            let bound = outcome.crf <= quality.floorCRF + 1e-9 ? "the floor CRF \(crf)" : "CRF \(crf)"
            note =
                "the target \(quality.target) is not met within the preset's cap: \(quality.target.metric.rawValue) \(score) at \(bound) (\(method))"
        }
        quality.search = QualityPlan.Search(
            crf: outcome.crf, predictedScore: outcome.predicted, met: outcome.met, note: note,
            samples: outcome.windows, sampleFrames: outcome.frames, sampleSeconds: outcome.seconds,
            trials: outcome.trials, elapsedSeconds: outcome.elapsedSeconds)
        plan.quality = quality
        if let bytes = QualityPlan.predictedVideoBytes(outcome, duration: durationSeconds) {
            let audio = Double(plan.audio?.bitRate ?? 0) / 8 * durationSeconds
            plan.estimatedBytes = Int64((bytes + audio + SizeEstimate.Model.containerBytes).rounded())
            plan.estimateMethod = .samples
        }
        return plan
    }
}

extension QualityPlan {
    /// The video's bytes over `duration` at the chosen CRF: the samples' bytes per second,
    /// interpolated between the two trials around it on a log scale (bytes fall about
    /// exponentially with the CRF), or the nearest trial's.
    static func predictedVideoBytes(_ outcome: QualitySearch.Outcome, duration: Double) -> Double? {
        guard outcome.seconds > 0, !outcome.trials.isEmpty else { return nil }
        let rates = outcome.trials.map { (crf: $0.crf, rate: max(Double($0.bytes), 1) / outcome.seconds) }
        let below = rates.last { $0.crf <= outcome.crf }
        let above = rates.first { $0.crf >= outcome.crf }
        let rate: Double
        if let below, let above, above.crf - below.crf > 1e-9 {
            let share = (outcome.crf - below.crf) / (above.crf - below.crf)
            rate = exp(log(below.rate) + share * (log(above.rate) - log(below.rate)))
        } else {
            rate = (below ?? above)!.rate
        }
        return rate * duration
    }
}
