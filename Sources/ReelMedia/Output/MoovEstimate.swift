internal import CFFmpeg
internal import CFFmpegShim

/// An upper bound of a remux's moov size, so room for it can be reserved at the front of the file
/// (instead of faststart's rewrite of the whole file): per sample at most a size, a decode delta, a
/// composition offset, a sync entry and a chunk entry (36 bytes) with a quarter more for safety,
/// plus headers, edit lists and metadata. Capped at 256 MiB.
enum MoovEstimate {
    /// What the estimate needs of one copied stream.
    struct Stream: Equatable {
        enum Kind { case video, audio, other }
        var kind: Kind
        /// The sample count the container declares (0 when unknown).
        var declaredSamples: Int64
        /// The stream's duration, or nil when unknown (the file's is used then).
        var durationSeconds: Double?
        /// Video: the guessed frame rate (0 when unknown).
        var frameRate: Double = 0
        /// Audio: samples per second and per frame (0 when unknown).
        var sampleRate: Int = 0
        var frameSize: Int = 0
        /// Codec headers (`extradata`) the sample description carries.
        var extradataBytes: Int = 0
    }

    /// The bound for `streams` of a file lasting `fileSeconds`, with `metadata` written.
    static func bytes(streams: [Stream], fileSeconds: Double, metadata: [String: String]) -> Int {
        var bytes = 16_384 + metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 64 }
        for stream in streams {
            var samples = Double(stream.declaredSamples)
            if samples <= 0 {
                let seconds = stream.durationSeconds ?? fileSeconds
                let rate: Double
                switch stream.kind {
                case .video:
                    rate = stream.frameRate > 0 ? min(stream.frameRate, 240) : 60
                case .audio:
                    let frame = stream.frameSize > 0 ? Double(stream.frameSize) : 1024
                    rate = Double(max(stream.sampleRate, 8000)) / frame
                case .other:
                    rate = 10
                }
                samples = max(0, seconds) * rate
            }
            bytes += 2_048 + Int(samples * 1.25 * 36) + stream.extradataBytes
        }
        return min(bytes, 256 << 20)
    }

    /// The bound for streams `indices` of `input`, with `metadata` written.
    static func bytes(input: InputFile, streams indices: [Int], metadata: [String: String]) -> Int {
        bytes(
            streams: indices.map { Stream(input, $0) }, fileSeconds: input.info.durationSeconds, metadata: metadata)
    }
}

extension MoovEstimate.Stream {
    /// What stream `index` of `input` declares.
    init(_ input: InputFile, _ index: Int) {
        let stream = input.stream(index)
        let parameters = stream.pointee.codecpar.pointee
        switch parameters.codec_type {
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        default: kind = .other
        }
        declaredSamples = stream.pointee.nb_frames
        durationSeconds =
            stream.pointee.duration > 0 && stream.pointee.duration != reel_nopts_value()
            ? Double(stream.pointee.duration) * av_q2d(stream.pointee.time_base) : nil
        if kind == .video {
            let guess = av_guess_frame_rate(input.context, stream, nil)
            frameRate = guess.num > 0 && guess.den > 0 ? av_q2d(guess) : 0
        }
        sampleRate = Int(parameters.sample_rate)
        frameSize = Int(parameters.frame_size)
        extradataBytes = Int(parameters.extradata_size)
    }
}
