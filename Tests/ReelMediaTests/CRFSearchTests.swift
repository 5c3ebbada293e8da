import Foundation
import Testing

@testable import ReelMedia

/// The search's decisions without its encodes (`CRFSearch`), on score curves of the shape x264's
/// have: -ln(1 - SSIM) falling in a straight line with the CRF, steeper or flatter by content.
@Suite("CRF search", .timeLimit(.minutes(1)))
struct CRFSearchTests {
    /// SSIM at `crf` on a line through (22, `at22`) with `slope` per step on -ln(1 - SSIM).
    static func curve(at22: Double, slope: Double) -> (Double) -> Double {
        { crf in 1 - exp(-(-log(1 - at22) + slope * (crf - 22))) }
    }

    /// Runs the search on `score` to its end; returns the choice and the trials made.
    static func search(
        _ target: QualityTarget, start: Double = 22, floor: Double = 10, ceiling: Double = 45,
        score: (Double) -> Double
    ) -> (choice: (crf: Double, predicted: Double, met: Bool), trials: [Double]) {
        var search = CRFSearch(target: target, start: start, floor: floor, ceiling: ceiling)
        var tried: [Double] = []
        while let crf = search.next() {
            tried.append(crf)
            search.record(crf: crf, value: score(crf))
            if tried.count > 10 { break }
        }
        return (search.choice(), tried)
    }

    @Test(arguments: [(0.995, -0.08), (0.99, -0.12), (0.97, -0.06), (0.96, -0.09)])
    func anEasyOrHardClipLandsOnTheTargetInTwoOrThreeTrials(at22: Double, slope: Double) {
        let target = QualityTarget(metric: .ssim, value: 0.98)
        let score = Self.curve(at22: at22, slope: slope)
        let (choice, trials) = Self.search(target, score: score)
        #expect(trials.first == 22)
        #expect(trials.count <= 3, "\(trials)")
        #expect(choice.met)
        // On the target at the interpolated CRF, before the whole-file offset.
        let interpolated = choice.crf - CRFSearch.wholeFileOffset
        #expect(abs(score(interpolated) - 0.98) < 0.0006, "CRF \(interpolated): \(score(interpolated)); \(trials)")
        // An easy clip gets a higher CRF than the preset's, a hard one a lower.
        #expect((choice.crf > 22) == (at22 > 0.98))
    }

    @Test func aTargetBeyondTheFloorEndsThereUnmet() {
        let target = QualityTarget(metric: .ssim, value: 0.999)
        let (choice, trials) = Self.search(target, score: Self.curve(at22: 0.9, slope: -0.05))
        #expect(trials.contains(10) && trials.allSatisfy { $0 >= 10 })
        #expect(choice.crf == 10 && !choice.met)
    }

    @Test func aTargetEveryCRFMeetsEndsAtTheCeiling() {
        let target = QualityTarget(metric: .ssim, value: 0.6)
        let (choice, trials) = Self.search(target, score: Self.curve(at22: 0.999, slope: -0.05))
        #expect(trials.last == 45 && choice.crf == 45 && choice.met, "\(trials)")
    }

    @Test func psnrTargetsStepInDecibels() {
        let target = QualityTarget(metric: .psnr, value: 40)
        let (choice, trials) = Self.search(target) { crf in 44 - 0.55 * (crf - 22) }
        #expect(trials.count == 2 && choice.met)
        #expect(abs(44 - 0.55 * (choice.crf - CRFSearch.wholeFileOffset - 22) - 40) < 0.1)
    }

    @Test func targetsAreReadAndWrittenAsWritten() throws {
        #expect(QualityTarget("ssim:0.985") == QualityTarget(metric: .ssim, value: 0.985))
        #expect(QualityTarget("PSNR:42")?.description == "psnr:42")
        for bad in ["ssim", "ssim:1", "ssim:0.3", "psnr:90", "vmaf:95", "ssim:x", "ssim:0.98:1", ""] {
            #expect(QualityTarget(bad) == nil, "\(bad)")
        }
        let encoded = try JSONEncoder().encode(QualityTarget(metric: .ssim, value: 0.985))
        #expect(String(decoding: encoded, as: UTF8.self) == "\"ssim:0.985\"")
    }

    /// Sampling: two windows at least, about 8 % of the frames, the whole of a short export.
    @Test func windowsSpreadOverTheExport() {
        let short = QualitySearch.windows(duration: 2, frameRate: 30, maxFrames: 1000)
        #expect(short.count == 1 && short[0].start == 0 && short[0].end == 2)
        let long = QualitySearch.windows(duration: 60, frameRate: 30, maxFrames: 1000)
        #expect(long.count == 5 && long.allSatisfy { abs($0.end - $0.start - 1) < 1e-9 })
        #expect(long.first!.start > 0 && long.last!.end < 60)
        let large = QualitySearch.windows(duration: 60, frameRate: 30, maxFrames: 60)
        #expect(large.count == 2)
    }
}

extension CRFSearchTests {
    /// Windows move to the nearest keyframe within half their share, never out of the export.
    @Test func windowsStartOnKeyframesNearThem() {
        let windows = QualitySearch.windows(duration: 60, frameRate: 30, maxFrames: 1000)
        let keyframes = stride(from: 0.0, through: 60, by: 8.0).map { $0 }
        let snapped = QualitySearch.snapped(windows, to: keyframes, duration: 60)
        #expect(snapped.count == windows.count)
        for (moved, window) in zip(snapped, windows) {
            #expect(keyframes.contains(moved.start), "\(moved)")
            #expect(abs(moved.start - window.start) <= 6 && moved.end <= 60)
            #expect(abs((moved.end - moved.start) - (window.end - window.start)) < 1e-9)
        }
        // No keyframe near: the window stays.
        let far = QualitySearch.snapped(windows, to: [0], duration: 60)
        #expect(far == windows)
    }
}
