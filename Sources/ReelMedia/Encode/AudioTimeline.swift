/// Where an audio stage's samples go on the output's clock, in samples from the output's zero.
///
/// Each decoded frame's timestamp says where its samples belong: small jitter (up to `tolerance`)
/// is ignored, a real jump (a skipped corrupt packet, a splice) re-anchors the position so audio
/// stays in sync with video. Placing converted samples then says how to keep the output gapless:
/// a gap is filled with silence, an overlap is dropped, samples before zero or past the range's end
/// are not kept. Pure arithmetic, no FFmpeg: `AudioStage` does what a `Placement` says.
struct AudioTimeline {
    /// How many samples to write and skip for one batch of converted samples.
    struct Placement: Equatable {
        /// Silence to write before the samples (filling a gap).
        var silence: Int64 = 0
        /// Leading samples to drop (before zero, or already covered: an overlap).
        var skip: Int64 = 0
        /// Samples to keep after those.
        var take: Int64 = 0
        /// On the first placement only: the position of the first sample written, where encoding starts.
        var firstPosition: Int64?
    }

    /// Timestamp jitter, in samples, ignored before re-anchoring.
    let tolerance: Int64
    /// Samples at or past this position are not kept (end of a time range).
    let endPosition: Int64?
    /// The longest gap filled with silence at once (a wild timestamp must not write hours of it).
    let maxSilence: Int64
    /// Position of the next sample entering, by the timestamps (nil before the first frame).
    private(set) var position: Int64?
    /// Position just after the last sample written (nil before the first).
    private(set) var writtenEnd: Int64?
    /// Whether the range's end has been reached: nothing more will be kept.
    private(set) var reachedEnd = false

    /// A timeline for `sampleRate` samples a second: 40 ms of tolerance, at most 60 s of silence at once.
    init(sampleRate: Int64, endPosition: Int64?) {
        tolerance = sampleRate / 25
        maxSilence = sampleRate * 60
        self.endPosition = endPosition
    }

    /// A decoded frame starts: `expected` is its timestamp as a position, nil when it has none.
    mutating func anchor(at expected: Int64?) {
        if let current = position {
            if let expected, abs(expected - current) > tolerance { position = expected }
        } else {
            position = expected ?? 0
        }
    }

    /// Places `count` samples that start at `position`; nil (and nothing changes) when there is
    /// nothing to place, or the range's end was reached.
    mutating func place(_ count: Int64) -> Placement? {
        guard count > 0, !reachedEnd, let start = position else { return nil }
        position = start + count
        var placement = Placement()
        if let written = writtenEnd {
            let gap = start - written
            if gap > tolerance {
                // Silence fills the gap up to the samples, never past the range's end.
                placement.silence = min(gap, maxSilence, endPosition.map { max(0, $0 - written) } ?? gap)
                writtenEnd = written + placement.silence
            } else if gap < -tolerance {
                placement.skip = min(count, -gap)
            }
        } else {
            placement.skip = min(count, max(0, -start))
            writtenEnd = max(0, start)
            placement.firstPosition = max(0, start)
        }
        let here = writtenEnd ?? 0
        var take = count - placement.skip
        if let endPosition {
            take = min(take, max(0, endPosition - here))
            if here + take >= endPosition { reachedEnd = true }
        }
        if take > 0 {
            placement.take = take
            writtenEnd = here + take
        }
        return placement
    }
}
