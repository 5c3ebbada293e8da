internal import CFFmpeg
internal import CFFmpegShim

/// The audio path of a transcode, run on its reader thread: decoder → resampler (rate, format,
/// downmix) → FIFO of `frame_size` samples → AAC encoder. Output timestamps count samples from the
/// first kept one, which is placed at its source time so audio and video stay in sync (see
/// `AudioTimeline`).
final class AudioStage {
    let inputIndex: Int
    private let decoder: Decoder
    private let encoder: Encoder
    /// Where the packets go: the output stream's index and time base, as values (the output file
    /// belongs to the writer).
    private let target: StreamTarget
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
    private var timeline: AudioTimeline
    /// Position of the next sample sent to the encoder.
    private var encodedPosition: Int64 = 0
    private var silence: SampleBuffer?
    private(set) var framesEncoded = 0
    private(set) var mediaSeconds = 0.0
    private(set) var finished = false

    /// Opens the AAC encoder for `encoding`, before the output's header is written (its stream is
    /// described from the encoder's parameters). `globalHeader`: the container wants codec headers
    /// out of band.
    static func openEncoder(_ encoding: AudioEncoding, globalHeader: Bool) throws(MediaError) -> Encoder {
        let encoder = try Encoder(name: "aac")
        let context = encoder.context
        context.pointee.sample_rate = Int32(encoding.sampleRate)
        context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
        av_channel_layout_default(&context.pointee.ch_layout, Int32(encoding.channels))
        context.pointee.bit_rate = Int64(encoding.bitrate)
        context.pointee.time_base = AVRational(num: 1, den: Int32(encoding.sampleRate))
        context.pointee.profile = FF_PROFILE_AAC_LOW
        if globalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        try encoder.open(options: [])
        return encoder
    }

    /// Decodes stream `streamIndex` of `input` into `encoder` (from `openEncoder`), whose packets go
    /// to `target`, over `window`.
    init(
        input: InputFile, streamIndex: Int, encoder: Encoder, target: StreamTarget, window: TimeWindow
    ) throws(MediaError) {
        inputIndex = streamIndex
        let inputStream = input.stream(streamIndex)
        sourceTimeBase = inputStream.pointee.time_base
        originPts = av_rescale_q(window.originMicroseconds, reel_time_base_q(), sourceTimeBase)
        decoder = try Decoder(stream: inputStream, index: streamIndex)
        decoded = try Frame()
        encodedPacket = try Packet()
        self.encoder = encoder
        self.target = target
        let context = encoder.context
        sampleRate = context.pointee.sample_rate
        timeline = AudioTimeline(
            sampleRate: Int64(sampleRate),
            endPosition: window.endMicroseconds.map {
                av_rescale_q(
                    $0 - window.originMicroseconds, reel_time_base_q(),
                    AVRational(num: 1, den: context.pointee.sample_rate))
            })
        frameSize = context.pointee.frame_size > 0 ? context.pointee.frame_size : 1024
        channels = context.pointee.ch_layout.nb_channels
        planar = av_sample_fmt_is_planar(AV_SAMPLE_FMT_FLTP) != 0
        bytesPerSample = av_get_bytes_per_sample(AV_SAMPLE_FMT_FLTP)
        fifo = try AudioFifo(format: AV_SAMPLE_FMT_FLTP, channels: channels)
        converted = SampleBuffer(channels: channels, format: AV_SAMPLE_FMT_FLTP)

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
        try encoder.drain(into: encodedPacket, for: target, to: sink)
    }

    private func drainDecoder(to sink: PacketSink) throws(MediaError) {
        while !finished {
            let result = try decoder.receive(decoded)
            guard result == .produced else { return }
            defer { decoded.unref() }
            let frame = decoded.pointer
            timeline.anchor(
                at: sane(frame.pointee.best_effort_timestamp).map {
                    av_rescale_q($0 - originPts, sourceTimeBase, AVRational(num: 1, den: sampleRate))
                })
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

    /// Moves `count` converted samples into the FIFO where the timeline places them.
    private func push(_ count: Int32) throws(MediaError) {
        guard let planes = converted.planes, let placement = timeline.place(Int64(count)) else { return }
        if timeline.reachedEnd { finished = true }
        if let first = placement.firstPosition { encodedPosition = first }
        if placement.silence > 0 { try writeSilence(placement.silence) }
        guard placement.take > 0 else { return }
        try fifo.write(
            planes, samples: Int32(placement.skip + placement.take), bytesPerSample: bytesPerSample, planar: planar,
            channels: channels, skip: Int32(placement.skip))
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
            try encoder.drain(into: encodedPacket, for: target, to: sink)
        }
    }
}
