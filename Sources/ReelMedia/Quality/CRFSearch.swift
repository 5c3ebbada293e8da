import Foundation

/// Which CRF to try next, and which to choose, for a quality target: the decisions of a quality
/// search without its encodes (`QualitySearch` runs them), so they can be tested on their own.
///
/// The score is taken in a domain where it is close to a straight line in the CRF: for SSIM,
/// -ln(1 - SSIM) (SSIM in dB over 10·log10(e)); PSNR as it is. The first trial is at the preset's
/// CRF; the next steps past the target by `overshoot`, along a prior slope until two trials give a
/// measured one (x264 medium on a pan, grain and high motion at 640x360: -0.073 to -0.098 per CRF
/// step for SSIM; the prior is -0.085, and -0.5 dB for PSNR), so that two trials usually bracket
/// the target; the choice is then the interpolation between them (three trials at most). A target
/// beyond the floor (the best quality allowed) or the ceiling ends the search there.
struct CRFSearch {
    let target: QualityTarget
    /// The preset's CRF: the first trial.
    let start: Double
    /// The lowest CRF the search may choose (the best quality), and the highest.
    let floor: Double
    let ceiling: Double
    /// Trials at most.
    var maxTrials = 3
    /// CRF steps the choice is raised by: `wholeFileOffset` for samples, 0 when the sample is the
    /// whole export (its score is the file's).
    var offset = CRFSearch.wholeFileOffset
    /// Whole CRF steps only (SVT-AV1's CRF is an integer); tenths otherwise.
    var integral = false
    /// The prior slope per step: SVT-AV1's 63 steps are finer than x264's and x265's 51.
    var slopeScale = 1.0
    /// Measured so far: CRF and the score's value in the target's metric.
    private(set) var trials: [(crf: Double, value: Double)] = []

    init(target: QualityTarget, start: Double, floor: Double, ceiling: Double) {
        self.target = target
        self.floor = min(floor, ceiling)
        self.ceiling = max(floor, ceiling)
        self.start = min(max(start, self.floor), self.ceiling)
    }

    /// Scores within this of the target are taken as on it.
    var tolerance: Double { target.metric == .ssim ? 0.0005 : 0.15 }

    /// The prior slope of the score's line per CRF step.
    var priorSlope: Double { (target.metric == .ssim ? -0.085 : -0.5) * slopeScale }

    /// `crf` on the search's grid: tenths, or whole steps when `integral`, rounded as `rule` says.
    private func grid(_ crf: Double, _ rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Double {
        integral ? crf.rounded(rule) : (crf * 10).rounded(rule) / 10
    }

    /// CRF steps a step toward the target goes past it, so the next trial brackets it.
    static let overshoot = 1.0

    /// How much better the whole export scores than its samples at one CRF, in CRF steps. A
    /// one-second sample of a slow pan over a still picture, encoded on its own at x264 medium CRF
    /// 31.9, scores SSIM 0.9796 where the same frames inside the whole 8 s encode score 0.9845 (a
    /// second of lead-in or tail recovers only 0.0012 of it): the whole file's rate control and
    /// macroblock tree see a longer past and future. On film-like grain and on high motion the
    /// gap is smaller. The choice is moved up by this much; measured at SSIM 0.98 on 640x360 from
    /// 960x540, the whole outputs then land at -0.0006 to +0.0027 of the target (without it,
    /// +0.0011 to +0.0037).
    static let wholeFileOffset = 1.2

    /// The score on the line: -ln(1 - SSIM), or PSNR.
    func line(_ value: Double) -> Double {
        target.metric == .ssim ? -log(max(1 - value, 1e-6)) : value
    }

    mutating func record(crf: Double, value: Double) {
        trials.removeAll { abs($0.crf - crf) < 1e-9 }
        trials.append((crf, value))
        trials.sort { $0.crf < $1.crf }
    }

    /// The passing trial of the highest CRF and the failing trial of the lowest.
    private var bracket: (pass: (crf: Double, value: Double)?, fail: (crf: Double, value: Double)?) {
        let pass = trials.filter { $0.value >= target.value }.max { $0.crf < $1.crf }
        let fail = trials.filter { $0.value < target.value }.min { $0.crf < $1.crf }
        return (pass, fail)
    }

    /// The CRF to try next; nil when the search is done.
    func next() -> Double? {
        guard !trials.isEmpty else { return start }
        guard trials.count < maxTrials else { return nil }
        if trials.contains(where: { abs($0.value - target.value) <= tolerance }) { return nil }
        let (pass, fail) = bracket
        // Bracketed: the line between the two is the answer (close to straight over a dozen steps).
        if pass != nil, fail != nil { return nil }
        // One side only: step toward the target from the trial nearest it.
        if let pass {
            if pass.crf >= ceiling - 1e-9 { return nil }
            return min(ceiling, step(from: pass))
        }
        if let fail {
            if fail.crf <= floor + 1e-9 { return nil }
            return max(floor, step(from: fail))
        }
        return nil
    }

    /// The slope measured between the two trials nearest the target, when it is a falling line.
    private var measuredSlope: Double? {
        guard trials.count >= 2 else { return nil }
        let nearest = trials.sorted { abs($0.value - target.value) < abs($1.value - target.value) }
        let a = nearest[0]
        let b = nearest[1]
        guard abs(b.crf - a.crf) > 1e-6 else { return nil }
        let slope = (line(b.value) - line(a.value)) / (b.crf - a.crf)
        return slope < -1e-4 ? slope : nil
    }

    private func step(from trial: (crf: Double, value: Double)) -> Double {
        let slope = measuredSlope ?? priorSlope
        var delta = (line(target.value) - line(trial.value)) / slope
        // Past the target by `overshoot`, so the two trials bracket it; at most twelve steps: a
        // prior slope far from the content's must not throw the next trial to the end of the range.
        let direction: Double = delta >= 0 ? 1 : -1
        delta = direction * min(abs(delta) + Self.overshoot, 12)
        return grid(trial.crf + delta)
    }

    private func interpolate(_ pass: (crf: Double, value: Double), _ fail: (crf: Double, value: Double)) -> Double {
        let low = line(pass.value)
        let high = line(fail.value)
        guard low - high > 1e-9 else { return pass.crf }
        let share = (low - line(target.value)) / (low - high)
        // Rounded down to a tenth: the side of the target the choice must be on.
        return grid(pass.crf + share * (fail.crf - pass.crf), .down)
    }

    /// What the search chooses from its trials: the CRF, the score expected there, and whether it
    /// meets the target.
    func choice() -> (crf: Double, predicted: Double, met: Bool) {
        if let onTarget = trials.filter({ abs($0.value - target.value) <= tolerance && $0.value >= target.value })
            .max(by: { $0.crf < $1.crf })
        {
            return (onTarget.crf, onTarget.value, true)
        }
        let (pass, fail) = bracket
        if let pass, let fail, pass.crf < fail.crf {
            let crf = interpolate(pass, fail)
            // The whole file scores a little higher than its samples (`wholeFileOffset`).
            let raised = grid(crf + offset)
            return (min(ceiling, raised), crf == pass.crf ? pass.value : target.value, true)
        }
        if let pass { return (pass.crf, pass.value, true) }
        if let fail {
            // Within the tolerance below the target counts as on it; otherwise the best tried.
            return (fail.crf, fail.value, target.value - fail.value <= tolerance)
        }
        return (start, target.value, false)
    }
}
