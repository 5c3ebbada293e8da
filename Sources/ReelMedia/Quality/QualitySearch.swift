internal import CFFmpeg
import Foundation
import Synchronization

/// Finds the CRF at which an export's video meets a quality target, before the export encodes it
/// (`--quality ssim:0.985`): ab-av1's sampled search, in-process.
///
/// Short windows of the export (`windows(…)`) are decoded once, scaled, tone-mapped and oriented
/// exactly as the export will (`VideoDecodeStage`), and kept in memory. Each trial encodes every
/// window at one CRF with the export's own encoder settings (`VideoEncodeStage.openEncoder`: codec,
/// preset, VBV cap, keyframes, colours), decodes the packets and scores each picture against the
/// frame that went in (`EncodeScorer`); `CRFSearch` chooses the trials and the answer. The windows
/// are encoded side by side, one single-threaded encoder per core the export may use, so a trial
/// keeps every core busy (two cores, two windows: both busy; one window: its encoder alone).
public enum QualitySearch {
    /// One trial: a CRF, the samples' score there and the bytes their video took.
    public struct Trial: Sendable, Equatable, Codable {
        public var crf: Double
        public var score: QualityScore
        /// Bytes of the encoded samples' video (no container).
        public var bytes: Int64
    }

    /// What the search found.
    public struct Outcome: Sendable, Equatable {
        /// The CRF chosen.
        public var crf: Double
        /// The score the samples are expected to have at `crf` (interpolated between trials, or a
        /// trial's own).
        public var predicted: Double
        /// Whether the target is met at `crf`; false when even the floor (the best quality the
        /// search may choose, under the preset's bit-rate cap) falls short.
        public var met: Bool
        /// The trials, by CRF.
        public var trials: [Trial]
        /// Windows sampled, their frames and their seconds of media.
        public var windows: Int
        public var frames: Int
        public var seconds: Double
        /// Wall time of the whole search, decoding included.
        public var elapsedSeconds: Double
    }

    /// The CRFs a search may choose between: the floor (the best quality it will spend bits on)
    /// and the ceiling.
    public struct Bounds: Sendable, Equatable {
        public var floor: Double
        public var ceiling: Double
        public init(floor: Double, ceiling: Double) {
            self.floor = floor
            self.ceiling = ceiling
        }
    }

    /// Searches the CRF for `plan`'s video (`.transcode` with video; its CRF is the first trial).
    /// `progress` gets 0…1 as samples are decoded and trials encoded. Throws `.cancelled` once
    /// `cancel` is raised, and what the export would throw on these frames.
    public static func run(
        _ plan: TranscodePlan, target: QualityTarget, bounds: Bounds, cancel: CancellationFlag,
        heartbeat: Heartbeat = Heartbeat(), progress: @escaping (Double) -> Void = { _ in }
    ) throws(MediaError) -> Outcome {
        guard case .transcode(let video?, _) = plan.mode else {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "a quality search needs video to encode")
        }
        let began = ContinuousClock.now
        let input = try InputFile(
            path: plan.inputPath, policy: plan.policy, interrupt: cancel, analysis: .full,
            byteRange: plan.inputByteRange)
        input.heartbeat = heartbeat
        let workers = plan.threads > 0 ? plan.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        let samples = try SampleWindows.read(
            input: input, plan: plan, video: video, budget: SampleWindows.budget, cancel: cancel,
            heartbeat: heartbeat, progress: { progress(0.2 * $0) })
        var outcome = try search(
            samples, encoding: video.encoding, target: target, bounds: bounds, workers: workers, cancel: cancel,
            heartbeat: heartbeat, progress: { progress(0.2 + 0.8 * $0) })
        outcome.elapsedSeconds = (ContinuousClock.now - began) / .seconds(1)
        return outcome
    }

    /// The CRF search on decoded samples: trials chosen by `CRFSearch`, each encoding every window.
    /// `progress` gets 0…1 by trials.
    static func search(
        _ samples: SampleWindows, encoding: VideoEncoding, target: QualityTarget, bounds: Bounds, workers: Int,
        cancel: CancellationFlag, heartbeat: Heartbeat, progress: (Double) -> Void
    ) throws(MediaError) -> Outcome {
        let began = ContinuousClock.now
        var search = CRFSearch(target: target, start: encoding.crf, floor: bounds.floor, ceiling: bounds.ceiling)
        if samples.isWhole { search.offset = 0 }
        if encoding.codec == .av1 {
            search.integral = true
            search.slopeScale = 0.6
        }
        var trials: [Trial] = []
        // Expected rounds, for the progress bar: three, or as many as are left once more are known.
        var round = 0
        while let crf = search.next() {
            if cancel.isRaised { throw MediaError.cancelled() }
            let trial = try samples.encode(
                crf: crf, encoding: encoding, workers: workers, cancel: cancel, heartbeat: heartbeat)
            trials.append(trial)
            search.record(crf: crf, value: target.value(of: trial.score))
            round += 1
            progress(Double(round) / Double(max(round + (search.next() == nil ? 0 : 1), 3)))
        }
        let choice = search.choice()
        return Outcome(
            crf: choice.crf, predicted: choice.predicted, met: choice.met, trials: trials.sorted { $0.crf < $1.crf },
            windows: samples.windows.count, frames: samples.frameCount, seconds: samples.seconds,
            elapsedSeconds: (ContinuousClock.now - began) / .seconds(1))
    }

    /// One stretch of an export a search samples: `start`…`end` seconds from the export's start,
    /// encoded and measured whole. (Tails of 20 to 40 frames encoded after a window for the encoder's
    /// lookahead, but not measured, moved the samples' score toward the whole file's by under 0.001
    /// SSIM for 67 % to 133 % more encoding; `CRFSearch.wholeFileOffset` accounts for the gap instead.)
    public struct Window: Sendable, Equatable {
        public var start: Double
        public var end: Double
    }

    /// Where to sample an export of `duration` seconds at `frameRate`: windows of about one second
    /// (at least 12 frames, at most 60), about 8 % of the frames in all but never fewer than two
    /// windows, spread evenly (each in the middle of its share of the export). An export no longer
    /// than three windows is sampled whole. At most `maxFrames` frames in all (their copies are
    /// held in memory): fewer windows for large pictures.
    public static func windows(duration: Double, frameRate: Double, maxFrames: Int) -> [Window] {
        let rate = max(frameRate, 1)
        let frames = min(max(rate, 12), 60)
        let share = 0.08
        let length = frames / rate
        guard duration > length * 3 else {
            let whole = max(duration, 0.001)
            return [Window(start: 0, end: whole)]
        }
        let wanted = Int((duration * share / length).rounded())
        let fit = max(1, Int(Double(maxFrames) / (length * rate)))
        let count = max(1, min(max(wanted, 2), 12, fit))
        let part = duration / Double(count)
        return (0..<count).map { index in
            let middle = part * (Double(index) + 0.5)
            let from = min(max(0, middle - length / 2), duration - length)
            return Window(start: from, end: from + length)
        }
    }
}

extension QualitySearch {
    /// The windows moved to start on a keyframe of the source (`keyframes`: seconds from the
    /// export's start), the nearest within half a window's share of the export, so a window's frames
    /// are decoded without the frames before them in their group of pictures (a camera's or x264's
    /// default keyframe every 8 s would cost up to 240 frames decoded and thrown away per window).
    /// A window with no keyframe near stays where it was; none leaves the export or moves into its
    /// first window's length.
    static func snapped(_ windows: [Window], to keyframes: [Double], duration: Double) -> [Window] {
        guard windows.count > 1, !keyframes.isEmpty else { return windows }
        let share = duration / Double(windows.count)
        return windows.map { window in
            let length = window.end - window.start
            // Not onto the export's first second unless it was there: the start of an encode is
            // unlike the rest (no past), and a window moved there misjudged film grain by 0.002.
            let candidates = keyframes.filter {
                $0 >= min(length, window.start) && $0 + length <= duration && abs($0 - window.start) <= share / 2
            }
            guard let nearest = candidates.min(by: { abs($0 - window.start) < abs($1 - window.start) }) else {
                return window
            }
            return Window(start: nearest, end: nearest + length)
        }
    }
}

extension QualityScore {
    /// The score of several sets of frames together: SSIMs weighted by frames, PSNR from the
    /// frames' mean squared error.
    static func combined(_ scores: [QualityScore]) -> QualityScore? {
        let frames = scores.reduce(0) { $0 + $1.frames }
        guard frames > 0 else { return nil }
        func mean(_ value: (QualityScore) -> Double) -> Double {
            scores.reduce(0) { $0 + value($1) * Double($1.frames) } / Double(frames)
        }
        // 10^(-PSNR/10) is the error over the peak squared: averaging it averages the errors.
        let error = mean { pow(10, -$0.psnr / 10) }
        return QualityScore(
            ssim: mean(\.ssim), ssimY: mean(\.ssimY), ssimU: mean(\.ssimU), ssimV: mean(\.ssimV),
            psnr: error > 0 ? min(100, -10 * log10(error)) : 100, frames: frames)
    }
}

/// The decoded frames of a quality search's windows, as the export would hand them to its encoder.
/// Filled once on the calling thread, then only read (by the trials' encoder threads): hence
/// `@unchecked Sendable`. Encoders take their own references to the frames' buffers and never
/// write into them.
final class SampleWindows: @unchecked Sendable {
    let windows: [[Frame]]
    let source: CodecParameters
    let format: AVPixelFormat
    let timeBase: AVRational
    let frameRate: AVRational
    let seconds: Double

    init(
        windows: [[Frame]], isWhole: Bool, source: CodecParameters, format: AVPixelFormat,
        timeBase: AVRational, frameRate: AVRational, seconds: Double
    ) {
        self.windows = windows
        self.isWhole = isWhole
        self.source = source
        self.format = format
        self.timeBase = timeBase
        self.frameRate = frameRate
        self.seconds = seconds
    }

    /// Whether the one window is the whole export: its score is the file's.
    let isWhole: Bool

    /// Frames measured per trial.
    var frameCount: Int { windows.reduce(0) { $0 + $1.count } }

    /// Bytes of pictures the windows of one export's search may hold: 512 MB.
    static let budget = 512e6

    /// Frames the windows may hold together within `budget` bytes of pictures.
    static func maxFrames(for encoding: VideoEncoding, budget: Double = budget) -> Int {
        let bytes = Double(encoding.width * encoding.height) * 1.5 * (encoding.tenBit ? 2 : 1)
        return max(24, Int(budget / max(bytes, 1)))
    }

    /// Decodes the windows `QualitySearch.windows` chooses for `plan`'s range of `input`.
    static func read(
        input: InputFile, plan: TranscodePlan, video: StreamEncoding<VideoEncoding>, budget: Double,
        cancel: CancellationFlag, heartbeat: Heartbeat, progress: (Double) -> Void
    ) throws(MediaError) -> SampleWindows {
        let info = input.info
        let start = plan.startSeconds ?? 0
        let end = min(plan.endSeconds ?? info.durationSeconds, info.durationSeconds)
        let duration = max(end - start, 0.001)
        var rate = 30.0
        if let stream = info.streams.indices.contains(video.stream) ? info.streams[video.stream] : nil,
            let frameRate = stream.frameRate, frameRate.isValid
        {
            rate = frameRate.value
        }
        if let cap = video.encoding.maxFrameRate { rate = min(rate, cap) }
        // Half a frame past each keyframe's time (its decoding time, a few frames before it is
        // shown): a seek there lands on it, not on the keyframe before (a rounding below its time
        // did, and 280 frames were decoded for 30).
        let keyframes = input.keyframeSeconds(ofStream: video.stream).map { $0 - start + 0.5 / rate }
        let ranges = QualitySearch.snapped(
            QualitySearch.windows(
                duration: duration, frameRate: rate, maxFrames: maxFrames(for: video.encoding, budget: budget)),
            to: keyframes, duration: duration)
        var windows: [[Frame]] = []
        var describe: (parameters: CodecParameters, format: AVPixelFormat, timeBase: AVRational, rate: AVRational)?
        var seconds = 0.0
        for (index, range) in ranges.enumerated() {
            if cancel.isRaised { throw MediaError.cancelled() }
            let whole = ranges.count == 1
            let window = TimeWindow(
                startSeconds: whole ? plan.startSeconds : start + range.start,
                endSeconds: whole ? plan.endSeconds : start + range.end,
                sourceStartSeconds: info.startSeconds, durationSeconds: info.durationSeconds)
            let pool = BoundedQueue<Frame>(capacity: 2)
            var frames: [Frame] = []
            let stage = try VideoDecodeStage(
                input: input, streamIndex: video.stream, encoding: video.encoding, window: window, pool: pool,
                poolSize: 2, decoderThreads: 1,
                emit: { (frame: Frame) throws(MediaError) in
                    let copy = try Frame(
                        width: frame.pointer.pointee.width, height: frame.pointer.pointee.height,
                        format: AVPixelFormat(rawValue: frame.pointer.pointee.format))
                    try check(av_frame_copy(copy.pointer, frame.pointer), "av_frame_copy")
                    try check(av_frame_copy_props(copy.pointer, frame.pointer), "av_frame_copy_props")
                    frames.append(copy)
                    try pool.push(frame)
                })
            if describe == nil {
                describe = (try stage.describeSource().parameters, stage.outputFormat, stage.timeBase, stage.frameRate)
            }
            if window.hasRangeStart { try input.seek(toMicroseconds: window.originMicroseconds) }
            let packet = try Packet()
            while !stage.finished {
                guard try input.read(into: packet, unless: cancel) else { break }
                defer { packet.unref() }
                if packet.streamIndex == stage.inputIndex { try stage.decode(packet) }
            }
            try stage.flush()
            if cancel.isRaised { throw MediaError.cancelled() }
            if !frames.isEmpty {
                windows.append(frames)
                seconds += whole ? duration : range.end - range.start
            }
            progress(Double(index + 1) / Double(ranges.count))
        }
        guard let describe, !windows.isEmpty else {
            throw MediaError(
                kind: .unreadableInput, call: "decode", message: "no video frame could be decoded from the input")
        }
        return SampleWindows(
            windows: windows, isWhole: ranges.count == 1, source: describe.parameters,
            format: describe.format, timeBase: describe.timeBase, frameRate: describe.rate, seconds: seconds)
    }

    /// Encodes every window at `crf`, `workers` at a time, and scores them together: against the
    /// pictures encoded, or against `references` (the same windows at another size, as
    /// `scaled(to:)` makes them), each decoded picture scaled to theirs first.
    func encode(
        crf: Double, encoding: VideoEncoding, workers: Int, cancel: CancellationFlag, heartbeat: Heartbeat,
        references: SampleWindows? = nil
    ) throws(MediaError) -> QualitySearch.Trial {
        var settings = encoding
        settings.crf = crf
        let encoding = settings
        let shared = TrialWork()
        let count = windows.count
        let body: @Sendable () -> Void = { [self] in
            while true {
                let index = shared.next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < count, !cancel.isRaised, !shared.failed.load(ordering: .relaxed) else { return }
                let outcome = Result { () throws(MediaError) in
                    try encodeWindow(
                        index, encoding: encoding, references: references?.windows[index], cancel: cancel,
                        heartbeat: heartbeat)
                }
                if case .failure = outcome { shared.failed.store(true, ordering: .relaxed) }
                shared.results.withLock { $0[index] = outcome }
            }
        }
        let threads = (1..<max(1, min(workers, count))).map { number in
            JoinableThread(name: "reel-sample-\(number)") { body() }
        }
        body()
        for thread in threads { thread.join() }
        if cancel.isRaised { throw MediaError.cancelled() }
        var scores: [QualityScore] = []
        var bytes: Int64 = 0
        for index in 0..<count {
            guard let result = shared.results.withLock({ $0[index] }) else {
                throw MediaError(kind: .internalFailure, call: "quality", message: "a sample encode did not run")
            }
            let (score, written) = try result.get()
            if let score { scores.append(score) }
            bytes += written
        }
        guard let score = QualityScore.combined(scores) else {
            throw MediaError(
                kind: .internalFailure, call: "quality", message: "the sample encodes gave no picture back")
        }
        return QualitySearch.Trial(crf: crf, score: score, bytes: bytes)
    }

    /// One window through a single-threaded encoder at the trial's settings, decoded and scored.
    private func encodeWindow(
        _ index: Int, encoding: VideoEncoding, references: [Frame]?, cancel: CancellationFlag, heartbeat: Heartbeat
    ) throws(MediaError) -> (QualityScore?, Int64) {
        if let references, references.count != windows[index].count {
            throw MediaError(
                kind: .internalFailure, call: "quality", message: "a sample window and its references differ in length")
        }
        let encoder = try VideoEncodeStage.openEncoder(
            encoding: encoding, source: source, format: format, timeBase: timeBase, frameRate: frameRate, threads: 1,
            globalHeader: true)
        let scorer = try EncodeScorer(
            parameters: try CodecParameters(of: encoder.context), timeBase: encoder.context.pointee.time_base)
        let packet = try Packet()
        var bytes: Int64 = 0
        func drain() throws(MediaError) {
            while try encoder.receive(packet) == .produced {
                bytes += Int64(packet.pointer.pointee.size)
                try scorer.take(packet)
                packet.unref()
            }
        }
        for (number, frame) in windows[index].enumerated() {
            if cancel.isRaised { throw MediaError.cancelled() }
            try scorer.keep(references?[number] ?? frame)
            try encoder.send(frame.pointer)
            try drain()
            heartbeat.beat()
        }
        try encoder.send(nil)
        try drain()
        return (try scorer.finish(), bytes)
    }
}

/// What the encoder threads of one trial share: the next window to take, whether one failed, and
/// each window's outcome.
private final class TrialWork: Sendable {
    let next = Atomic<Int>(0)
    let failed = Atomic<Bool>(false)
    let results = Mutex<[Int: Result<(QualityScore?, Int64), MediaError>]>([:])
}
