internal import CFFmpeg
import Foundation

extension QualitySearch {
    /// What a ladder's search found for one rung: its CRF, and whether it adds quality over the
    /// smaller rung the ladder keeps below it.
    public struct Rung: Sendable, Equatable {
        public var outcome: Outcome
        /// The rung it was compared with: the nearest smaller one kept (an index into the rungs);
        /// nil for the smallest, or when rungs were not compared.
        public var below: Int?
        /// That rung's samples encoded at its CRF, decoded and scaled up to this rung's size (as a
        /// player shows them on a screen this rung would fill), scored against this rung's pictures.
        public var belowScore: Double?
        /// Whether this rung scores more than `slack` above `belowScore` at its own CRF. The smallest
        /// rung always adds (a ladder keeps at least one).
        public var addsQuality: Bool
    }

    /// Searches the CRF of every rung of a ladder (per-title encoding): the windows are decoded once,
    /// as the ladder decodes (`plan`'s video, whose encoding is the first rung's), each smaller
    /// rung's samples scaled from those pictures as the ladder scales its rungs, and each rung
    /// searched as a single export's video is (`search`). With `slack`, the rungs are then compared
    /// from the smallest up: a rung whose score at its CRF is no more than `slack` above that of the
    /// kept rung below, scaled up to its size, adds nothing a viewer would see and is marked so (the
    /// caller drops it); the next rung up is compared with the same kept rung. `progress` gets 0…1.
    public static func ladder(
        _ plan: TranscodePlan, rungs: [VideoEncoding], target: QualityTarget, bounds: Bounds, slack: Double?,
        cancel: CancellationFlag, heartbeat: Heartbeat = Heartbeat(), progress: @escaping (Double) -> Void = { _ in }
    ) throws(MediaError) -> [Rung] {
        guard case .transcode(let video?, _) = plan.mode, let top = rungs.first else {
            throw MediaError(kind: .invalidArgument, call: "plan", message: "a ladder's search needs rungs to encode")
        }
        let input = try InputFile(
            path: plan.inputPath, policy: plan.policy, interrupt: cancel, analysis: .full,
            byteRange: plan.inputByteRange)
        input.heartbeat = heartbeat
        let workers = plan.threads > 0 ? plan.threads : max(1, ProcessInfo.processInfo.activeProcessorCount)
        var first = video
        first.encoding = top
        // Every rung's samples are held at once: the largest within 320 MB, the others about 0.7 of
        // that for a ladder halving its area rung by rung.
        let decoded = try SampleWindows.read(
            input: input, plan: plan, video: first, budget: 320e6, cancel: cancel, heartbeat: heartbeat,
            progress: { progress(0.1 * $0) })
        var samples = [decoded]
        for rung in rungs.dropFirst() {
            if cancel.isRaised { throw MediaError.cancelled() }
            samples.append(try decoded.scaled(to: rung))
        }
        let searchShare = slack == nil ? 0.9 : 0.75
        var found: [Rung] = []
        for (index, rung) in rungs.enumerated() {
            let before = 0.1 + searchShare * Double(index) / Double(rungs.count)
            let outcome = try search(
                samples[index], encoding: rung, target: target, bounds: bounds, workers: workers, cancel: cancel,
                heartbeat: heartbeat, progress: { progress(before + searchShare / Double(rungs.count) * $0) })
            found.append(Rung(outcome: outcome, below: nil, belowScore: nil, addsQuality: true))
        }
        guard let slack, rungs.count > 1 else { return found }
        var kept = rungs.count - 1
        for index in stride(from: rungs.count - 2, through: 0, by: -1) {
            var below = rungs[kept]
            below.crf = found[kept].outcome.crf
            let scaledUp = try samples[kept].encode(
                crf: below.crf, encoding: below, workers: workers, cancel: cancel, heartbeat: heartbeat,
                references: samples[index])
            let score = target.value(of: scaledUp.score)
            found[index].below = kept
            found[index].belowScore = score
            found[index].addsQuality = found[index].outcome.predicted > score + slack
            if found[index].addsQuality { kept = index }
            progress(
                0.1 + searchShare + (1 - 0.1 - searchShare) * Double(rungs.count - 1 - index) / Double(rungs.count - 1))
        }
        return found
    }
}

extension SampleWindows {
    /// The same windows at `encoding`'s size: every picture scaled as a ladder scales its lower
    /// rungs from its first (`LadderPipeline`: bicubic, the pictures' own matrix, their timing and
    /// colour tags kept).
    func scaled(to encoding: VideoEncoding) throws(MediaError) -> SampleWindows {
        var scaler: Scaler?
        var scaledWindows: [[Frame]] = []
        for window in windows {
            var frames: [Frame] = []
            frames.reserveCapacity(window.count)
            for frame in window {
                let picture = frame.pointer
                if scaler == nil || !scaler!.accepts(picture) {
                    scaler = try Scaler(
                        from: picture, toWidth: Int32(encoding.width), height: Int32(encoding.height),
                        format: AVPixelFormat(rawValue: picture.pointee.format), matrix: .source, threads: 1)
                }
                let own = try Frame(
                    width: Int32(encoding.width), height: Int32(encoding.height),
                    format: AVPixelFormat(rawValue: picture.pointee.format))
                try scaler!.scale(picture, into: own.pointer)
                own.takeProperties(of: picture, pixelAspect: encoding.avPixelAspect)
                frames.append(own)
            }
            scaledWindows.append(frames)
        }
        return SampleWindows(
            windows: scaledWindows, isWhole: isWhole, source: source, format: format, timeBase: timeBase,
            frameRate: frameRate, seconds: seconds)
    }
}
