import CFFmpeg

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
            av_rescale_q($0 - originMicroseconds, reel_time_base_q(), AVRational(num: 1, den: Int32(encoding.sampleRate)))
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
            av_dict_set(&outputStream.pointee.metadata, "language", language, 0)
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

    func outputStreamReady() {}

    func decode(_ packet: Packet, to sink: PacketSink) throws(MediaError) {
        guard try decoder.send(packet) else { return }
        try drainDecoder(to: sink)
    }

    func flush(to sink: PacketSink) throws(MediaError) {
        if !finished {
            _ = try decoder.send(nil)
            try drainDecoder(to: sink)
            if let resampler {
                let produced = try resampler.convert(nil, into: converted)
                try push(produced)
            }
        }
        finished = true
        try encodeFromFifo(final: true, to: sink)
        try encoder.send(nil)
        try drainEncoder(to: sink)
    }

    private func drainDecoder(to sink: PacketSink) throws(MediaError) {
        while !finished {
            let result = try decoder.receive(decoded)
            guard result == .produced else { return }
            defer { decoded.unref() }
            let frame = decoded.pointer
            if position == nil {
                var pts = frame.pointee.best_effort_timestamp
                if pts == reel_nopts_value() { pts = originPts }
                position = av_rescale_q(pts - originPts, sourceTimeBase, AVRational(num: 1, den: sampleRate))
            }
            if resampler == nil || !resampler!.accepts(frame) {
                resampler = try Resampler(from: frame, to: encoder.context)
            }
            let produced = try resampler!.convert(frame, into: converted)
            try push(produced)
            try encodeFromFifo(final: false, to: sink)
        }
    }

    /// Moves `count` converted samples into the FIFO, trimming what falls outside the range.
    private func push(_ count: Int32) throws(MediaError) {
        guard count > 0, let start = position, let planes = converted.planes else { return }
        var skip: Int64 = 0
        if start < 0 { skip = min(Int64(count), -start) }
        var keep = Int64(count)
        if let endPosition {
            keep = min(keep, max(0, endPosition - start))
            if start + Int64(count) >= endPosition { finished = true }
        }
        if keep > skip {
            if fifo.count == 0, encodedPosition == 0, framesEncoded == 0 {
                encodedPosition = max(start, 0)
            }
            try fifo.write(
                planes, samples: Int32(keep), bytesPerSample: bytesPerSample, planar: planar, channels: channels,
                skip: Int32(skip))
        }
        position = start + Int64(count)
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
            try drainEncoder(to: sink)
        }
    }

    private func drainEncoder(to sink: PacketSink) throws(MediaError) {
        while true {
            let result = try encoder.receive(encodedPacket)
            guard result == .produced else { return }
            encodedPacket.pointer.pointee.stream_index = outputStream.pointee.index
            av_packet_rescale_ts(encodedPacket.pointer, encoder.context.pointee.time_base, outputStream.pointee.time_base)
            try sink(encodedPacket)
        }
    }
}
