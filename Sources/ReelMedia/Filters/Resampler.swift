internal import CFFmpeg

/// Owns a swresample context (freed with `swr_free`) converting decoded audio to the encoder's
/// sample format, rate and channel layout (downmixing when there are more channels).
final class Resampler {
    private var context: OpaquePointer?
    let sourceRate: Int32
    let sourceFormat: Int32
    private var sourceLayout: AVChannelLayout
    let outputRate: Int32
    let outputFormat: AVSampleFormat

    init(from frame: UnsafeMutablePointer<AVFrame>, to encoder: UnsafeMutablePointer<AVCodecContext>) throws(MediaError)
    {
        sourceRate = frame.pointee.sample_rate
        sourceFormat = frame.pointee.format
        sourceLayout = AVChannelLayout()
        outputRate = encoder.pointee.sample_rate
        outputFormat = encoder.pointee.sample_fmt
        var input = frame.pointee.ch_layout
        if input.order == AV_CHANNEL_ORDER_UNSPEC || av_channel_layout_check(&input) == 0 {
            // Unknown layouts get the default layout for their channel count.
            av_channel_layout_default(&input, max(1, frame.pointee.ch_layout.nb_channels))
        }
        try check(av_channel_layout_copy(&sourceLayout, &input), "av_channel_layout_copy")
        var output = encoder.pointee.ch_layout
        try check(
            swr_alloc_set_opts2(
                &context, &output, outputFormat, outputRate, &input, AVSampleFormat(rawValue: sourceFormat),
                sourceRate, 0, nil), "swr_alloc_set_opts2", kind: .unsupportedCodec)
        try check(swr_init(context), "swr_init", kind: .unsupportedCodec, context: "cannot convert this audio")
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(&sourceLayout)
    }

    /// Whether this resampler was made for frames like `frame`.
    func accepts(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        guard frame.pointee.sample_rate == sourceRate, frame.pointee.format == sourceFormat else { return false }
        var layout = frame.pointee.ch_layout
        return layout.nb_channels == sourceLayout.nb_channels
            && (layout.order == AV_CHANNEL_ORDER_UNSPEC || av_channel_layout_compare(&layout, &sourceLayout) == 0)
    }

    /// Converts `frame` (or flushes with `nil`) into `buffer`; returns the number of samples produced.
    func convert(_ frame: UnsafeMutablePointer<AVFrame>?, into buffer: SampleBuffer) throws(MediaError) -> Int32 {
        let inputCount = frame?.pointee.nb_samples ?? 0
        let needed = max(swr_get_out_samples(context, inputCount), 0) + 32
        try buffer.reserve(needed)
        let inputData: UnsafeMutablePointer<UnsafePointer<UInt8>?>? = frame.map {
            UnsafeMutableRawPointer($0.pointee.extended_data).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
        }
        let produced = swr_convert(context, buffer.planes, buffer.capacity, inputData, inputCount)
        try check(produced, "swr_convert", kind: .internalFailure, context: "resampling failed")
        return produced
    }
}

/// Planar (or packed) sample storage that grows when a conversion needs more room.
final class SampleBuffer {
    private(set) var planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?
    private(set) var capacity: Int32 = 0
    let channels: Int32
    let format: AVSampleFormat

    init(channels: Int32, format: AVSampleFormat) {
        self.channels = channels
        self.format = format
    }

    deinit { release() }

    func reserve(_ samples: Int32) throws(MediaError) {
        guard samples > capacity else { return }
        release()
        let newCapacity = max(samples, 4096)
        var lineSize: Int32 = 0
        try check(
            av_samples_alloc_array_and_samples(&planes, &lineSize, channels, newCapacity, format, 0),
            "av_samples_alloc_array_and_samples")
        capacity = newCapacity
    }

    private func release() {
        if let planes {
            av_freep(UnsafeMutableRawPointer(planes))  // the samples, pointed to by planes[0]
            var array: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>? = planes
            av_freep(&array)
        }
        planes = nil
        capacity = 0
    }
}
