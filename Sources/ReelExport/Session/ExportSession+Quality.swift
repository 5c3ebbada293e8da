import Foundation
import ReelMedia

extension ExportSession {
    /// The plan with its CRF searched, when it aims at a quality target (`ExportPlan.quality`) and
    /// has not been searched yet: samples encoded under the stall watchdog, progress reported as
    /// the `searching` phase. Other plans come back unchanged.
    func searchedQuality(_ plan: ExportPlan, started: ContinuousClock.Instant) throws(ExportError) -> ExportPlan {
        guard let quality = plan.quality, quality.search == nil else { return plan }
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

    /// The result's quality section: the search's answer with the whole output's measured score.
    func measuredQuality(of plan: ExportPlan) -> Result.Quality? {
        guard let quality = plan.quality, let search = quality.search else { return nil }
        let measured = state.withLock { $0.measuredQuality }
        let score = measured.map { quality.target.value(of: $0) }
        let slack = quality.target.metric == .ssim ? 0.002 : 0.2
        return Result.Quality(
            target: quality.target, crf: search.crf, predictedScore: search.predictedScore, score: score,
            measured: measured, met: search.met && (score.map { $0 >= quality.target.value - slack } ?? false),
            note: search.note, searchSeconds: search.elapsedSeconds)
    }
}
