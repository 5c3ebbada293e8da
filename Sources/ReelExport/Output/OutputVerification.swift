import Foundation
internal import ReelMedia

/// The check a finished file passes before an export reports `completed`: read back from the
/// temporary file (`MediaProbe.readBack`), it must hold every stream the plan writes, its moov must
/// come first when the plan says network-optimised, no sample may lie past the end of the file, and
/// each video and audio stream must hold what the export wrote into it (`WrittenStream`: as many
/// samples, lasting as long within two frames, audio and video starting as far apart within a frame).
/// What was written is what was actually read and decoded from the source, with the durations
/// `FrameTiming` gives, never what the source's container declares (an FLV header, an MPEG-PS or Ogg
/// duration can be wrong, and ffmpeg converts those files too). Streams Reel encoded have their
/// first and last group of pictures decoded with error concealment off; streams it copied are never
/// decoded (their data is the source's, which may be damaged in ways that abort FFmpeg's decoders):
/// their index and the bytes at each end of every sample are compared with what was written.
///
/// Without a record of what was written (a file made elsewhere), each stream is held to the plan's
/// duration (or its source track's, when the container gives it) and every stream is decoded.
///
/// A file that fails is `output-invalid` (not retryable: the same export would write the same file),
/// unless reading it failed for an I/O reason, which may pass (`output-failed`, retryable).
enum OutputVerification {
    static func check(_ url: URL, plan: ExportPlan, asset: Asset, written: [WrittenStream]? = nil)
        throws(ExportError)
    {
        let file: ReadBack
        do {
            file = try MediaProbe.readBack(path: url.path, written: written)
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
        for stream in file.streams where stream.kind == .video || stream.kind == .audio {
            let name = "its \(stream.kind.rawValue) stream \(stream.index)"
            if stream.samples == 0 { throw invalid("\(name) has no samples") }
            if stream.samplesPastEnd > 0 {
                throw invalid("\(name) has \(stream.samplesPastEnd) samples past the end of the file: it is truncated")
            }
            if let mismatch = stream.mismatch { throw invalid("\(name) is not what was written: \(mismatch)") }
            if let failure = stream.decodeFailure { throw invalid("\(name) does not decode: \(failure)") }
            if stream.decoded, stream.decodedAtStart == 0 || stream.decodedAtEnd == 0 {
                throw invalid("\(name) decodes no frame at its \(stream.decodedAtStart == 0 ? "start" : "end")")
            }
        }
        let video = file.streams.first { $0.kind == .video }
        let audio = file.streams.first { $0.kind == .audio }
        let videoTolerance = plan.video.map { planned in
            2 / max(1, min(planned.frameRate ?? 30, planned.sourceFrameRate ?? 240)) + 0.002
        }
        let audioTolerance = plan.audio.map { 2 * 1024 / Double($0.sampleRate ?? 48_000) + 0.002 }
        if let written {
            try checkWritten(file, written: written, videoTolerance: videoTolerance, audioTolerance: audioTolerance)
        } else {
            try checkPlanned(
                video: video, audio: audio, plan: plan, asset: asset, videoTolerance: videoTolerance,
                audioTolerance: audioTolerance)
        }
        if let video, let audio, let videoStart = video.startSeconds, let audioStart = audio.startSeconds {
            let frame = video.sampleSeconds ?? 1.0 / 30
            let packet = audio.sampleSeconds ?? 1024.0 / 48_000
            let expected =
                written.map { writtenOffset($0, video: video.index, audio: audio.index) }
                ?? sourceOffset(plan: plan, asset: asset)
            let offset = audioStart - videoStart
            if abs(offset - expected) > frame + packet + 0.002 {
                throw invalid(
                    "its audio starts \(String(format: "%.3f", offset)) s after its video (expected \(String(format: "%.3f", expected)) s)"
                )
            }
        }
    }

    /// Each stream against what the export wrote into it: as many samples (where the muxer keeps one
    /// per packet: an encoded stream, or a copy it stores unchanged) and as long, within `tolerance`.
    private static func checkWritten(
        _ file: ReadBack, written: [WrittenStream], videoTolerance: Double?, audioTolerance: Double?
    ) throws(ExportError) {
        for record in written where record.kind == .video || record.kind == .audio {
            guard let stream = file.streams.first(where: { $0.index == record.index }) else {
                throw invalid("its \(record.kind.rawValue) stream \(record.index) is missing")
            }
            let name = "its \(record.kind.rawValue) stream \(record.index)"
            if !record.copied || record.recordsEachSample, stream.samples != record.samples {
                throw invalid("\(name) holds \(stream.samples) samples, \(record.samples) were written")
            }
            let tolerance = (record.kind == .video ? videoTolerance : audioTolerance) ?? 0.1
            if let expected = record.durationSeconds, let seconds = stream.durationSeconds,
                abs(seconds - expected) > tolerance
            {
                throw invalid(
                    "its \(record.kind.rawValue) lasts \(String(format: "%.3f", seconds)) s, not \(String(format: "%.3f", expected)) s as written (±\(String(format: "%.3f", tolerance)))"
                )
            }
        }
    }

    /// How much later than the video the audio was written to start.
    static func writtenOffset(_ written: [WrittenStream], video: Int, audio: Int) -> Double {
        guard let videoStart = written.first(where: { $0.index == video })?.startSeconds,
            let audioStart = written.first(where: { $0.index == audio })?.startSeconds
        else { return 0 }
        return audioStart - videoStart
    }

    /// Without a record of what was written: each stream lasts no longer than the plan, and no
    /// shorter than the plan or its source track (when the container gives the track's duration);
    /// the longest reaches the plan, so a tail lost from every stream fails even when the tracks'
    /// durations are unknown.
    private static func checkPlanned(
        video: ReadBack.Stream?, audio: ReadBack.Stream?, plan: ExportPlan, asset: Asset, videoTolerance: Double?,
        audioTolerance: Double?
    ) throws(ExportError) {
        var bounds: [(seconds: Double, tolerance: Double)] = []
        if let video, let planned = plan.video, let seconds = video.durationSeconds, let tolerance = videoTolerance {
            try checkDuration(
                seconds, name: "video", plan: plan, track: trackSeconds(planned.stream, plan: plan, asset: asset),
                tolerance: tolerance)
            bounds.append((seconds, tolerance))
        }
        if let audio, let planned = plan.audio, let seconds = audio.durationSeconds, let tolerance = audioTolerance {
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
