internal import CFFmpeg

/// The part of the source an export covers, on the source's own clock.
struct TimeWindow: Equatable {
    /// Source time (microseconds) that becomes 0 in the output.
    let originMicroseconds: Int64
    /// Source time (microseconds) where the output ends, when a range end was asked for.
    let endMicroseconds: Int64?
    /// Seconds of media the export covers (the progress bar's length).
    let totalSeconds: Double
    /// Whether the export starts after the source's start: a seek and a cut.
    let hasRangeStart: Bool

    /// The window for a plan's range (`startSeconds`, `endSeconds`, both from the source's start)
    /// over a source whose first sample is at `sourceStartSeconds` and that lasts `durationSeconds`.
    init(startSeconds: Double?, endSeconds: Double?, sourceStartSeconds: Double, durationSeconds: Double) {
        let start = saneStart(sourceStartSeconds)
        let rangeStart = startSeconds ?? 0
        originMicroseconds = start + Int64((rangeStart * Double(AV_TIME_BASE)).rounded())
        endMicroseconds = endSeconds.map { start + Int64(($0 * Double(AV_TIME_BASE)).rounded()) }
        let rangeEnd = endSeconds.map { min($0, durationSeconds) } ?? durationSeconds
        totalSeconds = max(rangeEnd - rangeStart, 0.001)
        hasRangeStart = rangeStart > 0
    }

    init(plan: TranscodePlan, info: MediaInfo) {
        self.init(
            startSeconds: plan.startSeconds, endSeconds: plan.endSeconds, sourceStartSeconds: info.startSeconds,
            durationSeconds: info.durationSeconds)
    }
}
