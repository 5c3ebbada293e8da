import Foundation
import ReelSystem

extension ExportSession {
    /// Sample encodes: this many, each one group of pictures long, spread over the export.
    static let sampleCount = 4
    /// Frames a sample holds at least (rounded up to whole keyframe intervals).
    static let sampleFrames = 60
    /// An export no longer than this many sample lengths is encoded whole instead of sampled.
    static let wholeEncodeLimit = 5.0

    /// The plan (`determineCompatibility()`) with its size measured rather than modelled: for a
    /// re-encode, the encoder is run on samples of the export at the plan's own settings (codec,
    /// CRF, caps, size, rate, colour, audio) and the bytes they write are extrapolated to the
    /// whole duration, as `ab-av1` samples a clip. Each sample is whole keyframe intervals of at
    /// least 60 frames (two seconds at 30 fps), so it holds the keyframe share the whole file has;
    /// four of them sit at the middles of four equal parts of the export. An export of at most five
    /// sample lengths is encoded whole (`encoded`: the estimate is the file's size).
    /// `estimateMethod` and `estimateSamples` say which and what it cost.
    ///
    /// Copies, audio-only exports, ladders and size-limited exports keep the plan's own estimate
    /// (the source's bytes, the audio rate, the limit), which are within a few percent without an
    /// encode. The samples are written to a private temporary folder, removed afterwards; cancelling
    /// the session (`cancelExport()`) or the calling task stops them. Throws what the export would
    /// throw on these frames.
    public func measuredPlan() async throws(ExportError) -> ExportPlan {
        var plan = try determineCompatibility()
        if plan.quality != nil {
            // A quality target's search measures the size too: its samples at the chosen CRF.
            let searching = plan
            let started = ContinuousClock.now
            let outcome: Swift.Result<ExportPlan, ExportError> = await withTaskCancellationHandler {
                await onOwnThread(named: "reel-search", stackSize: 4 << 20) { [self] in
                    Swift.Result { () throws(ExportError) in try searchedQuality(searching, started: started) }
                }
            } onCancel: {
                cancelExport()
            }
            return try outcome.get()
        }
        let settings = state.withLock { $0 }
        guard plan.method == .transcode, let video = plan.video, !video.copied, settings.ladder == nil,
            plan.sizeLimit == nil, plan.durationSeconds > 0
        else { return plan }
        // Frames, not seconds, decide what a sample holds: whole keyframe intervals (the keyframe
        // share the file has) and at least `sampleFrames` of them, past the tail where x264's
        // macroblock tree, with no future to look at, spends less (a 20-frame sample came out 15 %
        // light, a 60-frame one 3 %). A source with fewer frames than its rate says (a slide show, a
        // sparse AVI) is measured by the frames it really has.
        let rate = plan.frameRate ?? video.frameRate ?? 30
        let interval = max(1, video.keyframeInterval ?? Int((2 * rate).rounded()))
        let frames = interval * Int((Double(Self.sampleFrames) / Double(interval)).rounded(.up))
        var framesPerSecond = max(rate, 1)
        if let track = asset.videoTrack, let count = track.frameCount, count > 0,
            let seconds = track.durationSeconds ?? Optional(asset.duration), seconds > 0
        {
            framesPerSecond = min(framesPerSecond, max(Double(count) / seconds, 0.1))
        }
        let length = Double(frames) / framesPerSecond
        let duration = plan.durationSeconds
        let start = plan.timeRange?.start ?? 0
        let windows: [TimeRange?]
        if duration <= length * Self.wholeEncodeLimit {
            windows = [plan.timeRange]
        } else {
            let part = duration / Double(Self.sampleCount)
            windows = (0..<Self.sampleCount).map { index in
                let middle = start + part * (Double(index) + 0.5)
                let from = min(max(start, middle - length / 2), start + duration - length)
                return TimeRange(start: from, end: from + length)
            }
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "reel-estimate-\(UUID().uuidString)", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        } catch {
            throw ExportError(
                .outputFailed,
                "could not make a folder for the estimate's sample encodes: \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        let clock = ContinuousClock()
        let began = clock.now
        var written: [(bytes: Int64, seconds: Double)] = []
        for (index, window) in windows.enumerated() {
            if cancelFlag.isRaised || Task.isCancelled {
                throw ExportError(.cancelled, "the estimate was cancelled")
            }
            let sample = ExportSession(asset: asset, preset: preset, limits: limits)
            sample.state.withLock {
                $0.outputURL = folder.appendingPathComponent("sample-\(index).\(plan.output.type.fileExtension)")
                $0.outputFileType = plan.output.type
                $0.timeRange = window
                $0.metadataPolicy = settings.metadataPolicy
                $0.metadataOverrides = settings.metadataOverrides
                // Where the index goes changes nothing the extrapolation uses, and saves a rewrite.
                $0.shouldOptimizeForNetworkUse = false
                // The plan re-encodes; a part of the source must be encoded the same way.
                $0.forceTranscode = true
                $0.backgroundColor = settings.backgroundColor
                $0.allowsAudioOnly = settings.allowsAudioOnly
                $0.codecThreads = settings.codecThreads
                $0.stallTimeout = settings.stallTimeout
            }
            state.withLock { $0.sample = sample }
            defer { state.withLock { $0.sample = nil } }
            // A cancel that came between the check above and the hand-over reaches the sample too.
            if cancelFlag.isRaised { sample.cancelExport() }
            try await sample.export()
            guard let result = sample.result else {
                throw ExportError(.internal, "a sample encode for the estimate finished without a result")
            }
            written.append(
                (
                    result.bytes,
                    result.durationSeconds > 0
                        ? result.durationSeconds : TimeRange.seconds(of: window, within: asset.duration)
                ))
        }
        let bytes = written.reduce(0) { $0 + $1.bytes }
        let seconds = written.reduce(0) { $0 + $1.seconds }
        let elapsed = clock.now - began
        plan.estimateSamples = ExportPlan.EstimateSamples(
            count: windows.count, seconds: seconds, bytes: bytes,
            elapsedSeconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        if windows.count == 1 {
            plan.estimateMethod = .encoded
            plan.estimatedBytes = bytes
        } else {
            plan.estimateMethod = .samples
            plan.estimatedBytes = Self.extrapolate(written, to: duration, video: video, audio: plan.audio)
        }
        return plan
    }

    /// The whole export's bytes from its samples'. Each sample file has the container's fixed part
    /// (file type and movie headers) once; the media and the per-frame index grow with the duration.
    /// Under a VBV cap, x264 starts with its buffer 90 % full and may spend it on top of the maximum
    /// rate, once per encode: a sample at the cap is counted without that bonus, and the whole file
    /// is given it once and held to the cap over its duration (as `SizeEstimate` caps its model).
    static func extrapolate(
        _ samples: [(bytes: Int64, seconds: Double)], to duration: Double, video: ExportPlan.Video,
        audio: ExportPlan.Audio?
    ) -> Int64 {
        let fixed = SizeEstimate.Model.containerBytes
        let seconds = max(samples.reduce(0) { $0 + $1.seconds }, 1e-3)
        guard let cap = video.maxBitrate.map(Double.init) else {
            let media = max(0, Double(samples.reduce(0) { $0 + $1.bytes }) - fixed * Double(samples.count))
            return Int64((media / seconds * duration + fixed).rounded())
        }
        let audioPerSecond = Double(audio?.bitRate ?? 0) / 8
        let capPerSecond = cap / 8
        let bonus = SizeEstimate.Model.vbvBufferSpent * Double(video.bufferSize ?? Int(cap)) / 8
        var video = 0.0
        var capped = false
        for sample in samples {
            let spent = max(0, Double(sample.bytes) - fixed - audioPerSecond * sample.seconds)
            if spent > capPerSecond * sample.seconds {
                capped = true
                video += max(capPerSecond * sample.seconds, spent - bonus)
            } else {
                video += spent
            }
        }
        var total = video / seconds * duration + (capped ? bonus : 0)
        total = min(total, capPerSecond * duration + bonus)
        return Int64((total + audioPerSecond * duration + fixed).rounded())
    }
}
