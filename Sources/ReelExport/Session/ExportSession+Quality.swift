import Foundation
import ReelMedia

extension ExportSession {
    /// The plan with its CRF searched, when it aims at a quality target (`ExportPlan.quality`) and
    /// has not been searched yet: samples encoded under the stall watchdog, progress reported as
    /// the `searching` phase. Other plans come back unchanged.
    func searchedQuality(_ plan: ExportPlan, started: ContinuousClock.Instant) throws(ExportError) -> ExportPlan {
        guard let quality = plan.quality, quality.search == nil else { return plan }
        if plan.method == .smartPassthrough {
            return try weighedCopy(plan, started: started)
        }
        var transcode = plan.transcodePlan(limits: limits)
        transcode.threads = codecThreads
        let media = transcode
        let bounds = QualitySearch.Bounds(floor: quality.floorCRF, ceiling: quality.ceilingCRF)
        let outcome = try watched { [self, cancelFlag] heartbeat throws(MediaError) in
            try QualitySearch.run(
                media, target: quality.target, bounds: bounds, cancel: cancelFlag, heartbeat: heartbeat
            ) { [self] fraction in
                publish(
                    TranscodeProgress(phase: .searching, fraction: fraction, frames: 0, mediaSeconds: 0),
                    started: started)
            }
        }
        return plan.searched(outcome)
    }

    /// A source smart passthrough would copy, weighed against a re-encode at the quality target: the
    /// re-encode's size is measured on samples (the source is the reference: its own pictures are
    /// the quality kept), and the copy wins unless the re-encode is predicted under 90 % of the
    /// source's bytes. Either way the plan's decision says the two sizes.
    private func weighedCopy(_ copy: ExportPlan, started: ContinuousClock.Instant) throws(ExportError) -> ExportPlan {
        guard let target = copy.quality?.target else { return copy }
        var reencode = try plan(forcingTranscode: true)
        guard reencode.quality != nil else { return copy }
        reencode = try searchedQuality(reencode, started: started)
        guard let search = reencode.quality?.search else { return copy }
        let predicted = reencode.estimatedBytes
        let source = copy.estimatedBytes
        let share = Int((Double(predicted) / Double(max(source, 1)) * 100).rounded())
        let sizes =
            "at \(target) a re-encode is predicted at \(SizeLimit.describe(Double(predicted))) (samples, CRF "
            + String(format: "%.1f", search.crf) + "), \(share) % of the source's \(SizeLimit.describe(Double(source)))"
        if search.met, Double(predicted) < 0.9 * Double(source) {
            reencode.decision = ExportPlan.Decision(obstacle: .qualityTarget, summary: "re-encoded: " + sizes)
            return reencode
        }
        var kept = copy
        kept.quality?.search = search
        kept.decision = ExportPlan.Decision(
            obstacle: nil,
            summary: "copied: the source already fits \(preset.name), and " + sizes
                + (search.met ? "" : " without meeting the target"))
        return kept
    }

    /// The result's quality section: the search's answer with the whole output's measured score
    /// (nil for a copy, whose pictures are the source's).
    func measuredQuality(of plan: ExportPlan) -> Result.Quality? {
        guard plan.method == .transcode, let quality = plan.quality, let search = quality.search else { return nil }
        let measured = state.withLock { $0.measuredQuality }
        let score = measured.map { quality.target.value(of: $0) }
        let slack = QualityPlan.slack(quality.target)
        return Result.Quality(
            target: quality.target, crf: search.crf, predictedScore: search.predictedScore, score: score,
            measured: measured, met: search.met && (score.map { $0 >= quality.target.value - slack } ?? false),
            note: search.note, searchSeconds: search.elapsedSeconds)
    }
}
