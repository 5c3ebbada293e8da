import Foundation
internal import ReelMedia

/// The check a finished file passes before an export reports `completed`: read back from the
/// temporary file (`MediaProbe.readBack`), it must hold every stream the plan writes, its moov must
/// come first when the plan says network-optimised, each video and audio stream must last as long as
/// the plan (or its source track) within two frames, audio and video must start together (as in the
/// source) within a frame, no sample may lie past the end of the file, and the first and last group
/// of pictures of every stream must decode with error concealment off.
///
/// A file that fails is `output-invalid` (not retryable: the same export would write the same file),
/// unless reading it failed for an I/O reason, which may pass (`output-failed`, retryable).
enum OutputVerification {
    static func check(_ url: URL, plan: ExportPlan, asset: Asset) throws(ExportError) {
        let file: ReadBack
        do {
            file = try MediaProbe.readBack(path: url.path)
        } catch {
            throw unreadable(error)
        }
        if plan.output.networkOptimized, (try? MovieAtoms.moovPrecedesMdat(url)) != true {
            throw invalid("its moov atom does not precede the media data")
        }
        for kind in [TrackKind.video, .audio, .subtitle] {
            let wanted = plan.streams.filter { $0.kind == kind && $0.action != .skip }.count
            let found = file.streams.filter { $0.kind == kind }.count
            if found < wanted { throw invalid("it has \(found) \(kind.rawValue) streams, \(wanted) expected") }
        }
        let video = file.streams.first { $0.kind == .video }
        let audio = file.streams.first { $0.kind == .audio }
        for stream in file.streams where stream.kind == .video || stream.kind == .audio {
            let name = "its \(stream.kind.rawValue) stream \(stream.index)"
            if stream.samples == 0 { throw invalid("\(name) has no samples") }
            if stream.samplesPastEnd > 0 {
                throw invalid("\(name) has \(stream.samplesPastEnd) samples past the end of the file: it is truncated")
            }
            if let failure = stream.decodeFailure { throw invalid("\(name) does not decode: \(failure)") }
            if stream.decodedAtStart == 0 || stream.decodedAtEnd == 0 {
                throw invalid("\(name) decodes no frame at its \(stream.decodedAtStart == 0 ? "start" : "end")")
            }
        }
        // Each stream lasts no longer than the plan, and no shorter than the plan or its source track
        // (when the container gives the track's duration); the longest reaches the plan, so a tail
        // lost from every stream fails even when the tracks' durations are unknown.
        var bounds: [(seconds: Double, tolerance: Double)] = []
        if let video, let planned = plan.video, let seconds = video.durationSeconds {
            let frame = 1 / max(1, min(planned.frameRate ?? 30, planned.sourceFrameRate ?? 240))
            let tolerance = 2 * frame + 0.002
            try checkDuration(
                seconds, name: "video", plan: plan, track: trackSeconds(planned.stream, plan: plan, asset: asset),
                tolerance: tolerance)
            bounds.append((seconds, tolerance))
        }
        if let audio, let planned = plan.audio, let seconds = audio.durationSeconds {
            let tolerance = 2 * 1024 / Double(planned.sampleRate ?? 48_000) + 0.002
            try checkDuration(
                seconds, name: "audio", plan: plan, track: trackSeconds(planned.stream, plan: plan, asset: asset),
                tolerance: tolerance)
            bounds.append((seconds, tolerance))
        }
        if let longest = bounds.max(by: { $0.seconds < $1.seconds }), plan.durationSeconds > 0,
            longest.seconds < plan.durationSeconds - longest.tolerance
        {
            throw invalid(
                "it lasts \(String(format: "%.3f", longest.seconds)) s, not \(String(format: "%.3f", plan.durationSeconds)) s"
            )
        }
        if let video, let audio, let videoStart = video.startSeconds, let audioStart = audio.startSeconds {
            let frame = video.sampleSeconds ?? 1.0 / 30
            let packet = audio.sampleSeconds ?? 1024.0 / 48_000
            let expected = sourceOffset(plan: plan, asset: asset)
            let offset = audioStart - videoStart
            if abs(offset - expected) > frame + packet + 0.002 {
                throw invalid(
                    "its audio starts \(String(format: "%.3f", offset)) s after its video (expected \(String(format: "%.3f", expected)) s)"
                )
            }
        }
    }

    /// Why a file Reel has just written could not be opened or read back. An I/O failure (`EIO`, a full
    /// disk, a stale network handle, no memory or file descriptors left) may pass: `no-space` or
    /// `output-failed`, retryable. Anything else means the file is not what was written:
    /// `output-invalid`, not retryable.
    static func unreadable(_ error: MediaError) -> ExportError {
        let message = "the output could not be read back: \(error.message)"
        if error.kind == .noSpace { return ExportError(.noSpace, message, retryable: true) }
        if error.isTransientIO { return ExportError(.outputFailed, message, retryable: true) }
        return invalid("it cannot be opened (\(error.message))")
    }

    static func invalid(_ reason: String) -> ExportError {
        ExportError(.outputInvalid, "the output failed verification: \(reason)", retryable: false)
    }

    /// How long source stream `index` lasts within the plan's range, when the container says.
    static func trackSeconds(_ index: Int, plan: ExportPlan, asset: Asset) -> Double? {
        guard let seconds = asset.tracks.first(where: { $0.index == index })?.durationSeconds, seconds > 0 else {
            return nil
        }
        return max(0, seconds - (plan.timeRange?.start ?? 0))
    }

    /// How much later than the video the audio should start: as in the source, measured from the
    /// output's zero (the earlier of the two tracks' starts, plus the time range's start).
    static func sourceOffset(plan: ExportPlan, asset: Asset) -> Double {
        guard let video = plan.video, let audio = plan.audio,
            let videoStart = asset.tracks.first(where: { $0.index == video.stream })?.startSeconds,
            let audioStart = asset.tracks.first(where: { $0.index == audio.stream })?.startSeconds
        else { return 0 }
        let zero = min(videoStart, audioStart) + (plan.timeRange?.start ?? 0)
        return max(0, audioStart - zero) - max(0, videoStart - zero)
    }

    private static func checkDuration(
        _ seconds: Double, name: String, plan: ExportPlan, track: Double?, tolerance: Double
    ) throws(ExportError) {
        guard plan.durationSeconds > 0 else { return }
        let short = track.map { seconds < min(plan.durationSeconds, $0) - tolerance } ?? false
        let long = seconds > plan.durationSeconds + tolerance
        if short || long {
            let expected = min(plan.durationSeconds, track ?? plan.durationSeconds)
            throw invalid(
                "its \(name) lasts \(String(format: "%.3f", seconds)) s, not \(String(format: "%.3f", expected)) s (±\(String(format: "%.3f", tolerance)))"
            )
        }
    }
}
