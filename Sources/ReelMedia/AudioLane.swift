internal import CFFmpeg
internal import CFFmpegShim

/// The audio half of a transcode: decoder → resampler (rate, format, downmix) → FIFO of `frame_size`
/// samples → AAC encoder. Output timestamps count samples from the first kept one, which is placed
/// at its source time so audio and video stay in sync.
final class AudioLane {
    let inputIndex: Int
    private let inputStream: UnsafeMutablePointer<AVStream>
    private let decoder: Decoder
    private let encoder: Encoder
    private let outputStream: UnsafeMutablePointer<AVStream>
    private var resampler: Resampler?
    private let fifo: AudioFifo
    private let converted: SampleBuffer
    private let decoded: Frame
    private let encodeFrame: Frame
    private let encodedPacket: Packet
    private let sourceTimeBase: AVRational
    private let originPts: Int64
    private let sampleRate: Int32
    private let frameSize: Int32
    private let bytesPerSample: Int32
    private let planar: Bool
    private let channels: Int32
    /// Output sample position (from the output's zero) of the next sample entering the FIFO.
    private var position: Int64?
    /// Output samples past this position are dropped (end of a time range).
    private let endPosition: Int64?
    /// Position of the next sample sent to the encoder.
    private var encodedPosition: Int64 = 0
    /// Position just after the last sample written into the FIFO (nil before the first).
    private var writtenEnd: Int64?
    /// Timestamp jitter (in samples) ignored before re-anchoring: 40 ms.
    private var tolerance: Int64 { Int64(sampleRate) / 25 }
    private var silence: SampleBuffer?
    private(set) var framesEncoded = 0
    private(set) var mediaSeconds = 0.0
    private(set) var finished = false

    init(
        input: InputFile, streamIndex: Int, encoding: AudioEncoding, output: OutputFile,
        originMicroseconds: Int64, endMicroseconds: Int64?
    ) throws(MediaError) {
        inputIndex = streamIndex
        inputStream = input.stream(streamIndex)
        sourceTimeBase = inputStream.pointee.time_base
        originPts = av_rescale_q(originMicroseconds, reel_time_base_q(), sourceTimeBase)
        decoder = try Decoder(stream: inputStream, index: streamIndex)
        decoded = try Frame()
        encodedPacket = try Packet()
        sampleRate = Int32(encoding.sampleRate)
        endPosition = endMicroseconds.map {
            av_rescale_q(
                $0 - originMicroseconds, reel_time_base_q(), AVRational(num: 1, den: Int32(encoding.sampleRate)))
        }

        encoder = try Encoder(name: "aac")
        let context = encoder.context
        context.pointee.sample_rate = sampleRate
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        av_channel_layout_default(&context.pointee.ch_layout, Int32(encoding.channels))
        context.pointee.bit_rate = Int64(encoding.bitrate)
        context.pointee.time_base = AVRational(num: 1, den: sampleRate)
        context.pointee.profile = FF_PROFILE_AAC_LOW
        if output.wantsGlobalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try encoder.open(options: [])
        frameSize = context.pointee.frame_size > 0 ? context.pointee.frame_size : 1024
        channels = context.pointee.ch_layout.nb_channels
        planar = av_sample_fmt_is_planar(AV_SAMPLE_FMT_FLTP) != 0
        bytesPerSample = av_get_bytes_per_sample(AV_SAMPLE_FMT_FLTP)
        fifo = try AudioFifo(format: AV_SAMPLE_FMT_FLTP, channels: channels)
        converted = SampleBuffer(channels: channels, format: AV_SAMPLE_FMT_FLTP)

        outputStream = try output.addStream()
        try check(
            avcodec_parameters_from_context(outputStream.pointee.codecpar, context), "avcodec_parameters_from_context")
        outputStream.pointee.time_base = context.pointee.time_base
        if let language = readDictionary(inputStream.pointee.metadata)["language"] {
            try check(av_dict_set(&outputStream.pointee.metadata, "language", language, 0), "av_dict_set")
        }

        encodeFrame = try Frame()
        encodeFrame.pointer.pointee.nb_samples = frameSize
        encodeFrame.pointer.pointee.format = AV_SAMPLE_FMT_FLTP.rawValue
        encodeFrame.pointer.pointee.sample_rate = sampleRate
        try check(
            av_channel_layout_copy(&encodeFrame.pointer.pointee.ch_layout, &context.pointee.ch_layout),
            "av_channel_layout_copy")
        try check(av_frame_get_buffer(encodeFrame.pointer, 0), "av_frame_get_buffer")
    }

    func decode(_ packet: Packet, to sink: PacketSink) throws(MediaError) {
        try decoder.feed(packet) { () throws(MediaError) in try drainDecoder(to: sink) }
    }

    func flush(to sink: PacketSink) throws(MediaError) {
        if !finished {
            try decoder.feed(nil) { () throws(MediaError) in try drainDecoder(to: sink) }
            if let resampler {
                let produced = try resampler.convert(nil, into: converted)
                try push(produced)
            }
        }
        finished = true
        try encodeFromFifo(final: true, to: sink)
        try encoder.send(nil)
        try encoder.drain(into: encodedPacket, for: outputStream, to: sink)
    }

    private func drainDecoder(to sink: PacketSink) throws(MediaError) {
        while !finished {
            let result = try decoder.receive(decoded)
            guard result == .produced else { return }
            defer { decoded.unref() }
            let frame = decoded.pointer
            // Each frame's own timestamp says where its samples belong; small jitter is ignored, a
            // real jump (a skipped corrupt packet, a splice) re-anchors the position so audio stays in
            // sync: a gap is filled with silence, an overlap is dropped (see `push`).
            let expected = sane(frame.pointee.best_effort_timestamp).map {
                av_rescale_q($0 - originPts, sourceTimeBase, AVRational(num: 1, den: sampleRate))
            }
            if position == nil {
                position = expected ?? 0
            } else if let expected, let current = position, abs(expected - current) > tolerance {
                position = expected
            }
            if resampler == nil || !resampler!.accepts(frame) {
                if let old = resampler {
                    // Keep what the old resampler still buffers.
                    let held = try old.convert(nil, into: converted)
                    try push(held)
                }
                resampler = try Resampler(from: frame, to: encoder.context)
            }
            let produced = try resampler!.convert(frame, into: converted)
            try push(produced)
            try encodeFromFifo(final: false, to: sink)
        }
    }

    /// Moves `count` converted samples (which start at `position`) into the FIFO. Samples before the
    /// output's zero or already written (an overlap) are dropped, a gap larger than the tolerance is
    /// filled with silence first, smaller jitter is closed up, and nothing past the range's end is kept.
    private func push(_ count: Int32) throws(MediaError) {
        guard count > 0, let start = position, let planes = converted.planes else { return }
        position = start + Int64(count)
        var skip: Int64 = 0
        if let written = writtenEnd {
            let gap = start - written
            if gap > tolerance {
                try writeSilence(min(gap, Int64(sampleRate) * 60))
            } else if gap < -tolerance {
                skip = min(Int64(count), -gap)
            }
        } else {
            skip = min(Int64(count), max(0, -start))
            writtenEnd = max(0, start)
            encodedPosition = max(0, start)
        }
        let here = writtenEnd ?? 0
        var take = Int64(count) - skip
        if let endPosition {
            take = min(take, max(0, endPosition - here))
            if here + take >= endPosition { finished = true }
        }
        guard take > 0 else { return }
        try fifo.write(
            planes, samples: Int32(skip + take), bytesPerSample: bytesPerSample, planar: planar, channels: channels,
            skip: Int32(skip))
        writtenEnd = here + take
    }

    private func writeSilence(_ samples: Int64) throws(MediaError) {
        if silence == nil {
            let buffer = SampleBuffer(channels: channels, format: AV_SAMPLE_FMT_FLTP)
            try buffer.reserve(4096)
            try check(
                av_samples_set_silence(buffer.planes, 0, buffer.capacity, channels, AV_SAMPLE_FMT_FLTP),
                "av_samples_set_silence")
            silence = buffer
        }
        guard let silence, let planes = silence.planes else { return }
        var left = samples
        while left > 0 {
            let chunk = Int32(min(left, Int64(silence.capacity)))
            try fifo.write(planes, samples: chunk, bytesPerSample: bytesPerSample, planar: planar, channels: channels)
            left -= Int64(chunk)
        }
        writtenEnd = (writtenEnd ?? 0) + samples
    }

    private func encodeFromFifo(final: Bool, to sink: PacketSink) throws(MediaError) {
        while fifo.count >= frameSize || (final && fifo.count > 0) {
            let count = min(frameSize, fifo.count)
            try encodeFrame.makeWritable()
            encodeFrame.pointer.pointee.nb_samples = count
            try fifo.read(into: encodeFrame.pointer, count: count)
            encodeFrame.pointer.pointee.pts = encodedPosition
            encodedPosition += Int64(count)
            try encoder.send(encodeFrame.pointer)
            framesEncoded += 1
            mediaSeconds = Double(encodedPosition) / Double(sampleRate)
            try encoder.drain(into: encodedPacket, for: outputStream, to: sink)
        }
    }
}
