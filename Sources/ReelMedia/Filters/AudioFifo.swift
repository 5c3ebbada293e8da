internal import CFFmpeg
internal import CFFmpegShim

/// Owns an `AVAudioFifo` (freed with `av_audio_fifo_free`): the encoder wants exactly `frame_size`
/// samples per frame, the resampler produces whatever it produces.
final class AudioFifo {
    private let fifo: OpaquePointer
    /// Plane pointers for one write, allocated once (no allocation per audio frame).
    private let shifted: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private let planeCapacity: Int

    init(format: AVSampleFormat, channels: Int32) throws(MediaError) {
        guard let fifo = av_audio_fifo_alloc(format, channels, 4096) else {
            throw MediaError(kind: .internalFailure, call: "av_audio_fifo_alloc", message: "out of memory")
        }
        self.fifo = fifo
        planeCapacity = max(1, Int(channels))
        shifted = .allocate(capacity: planeCapacity)
    }

    deinit {
        av_audio_fifo_free(fifo)
        shifted.deallocate()
    }

    var count: Int32 { av_audio_fifo_size(fifo) }

    /// Appends `samples` samples from `planes`, skipping the first `skip` of them.
    func write(
        _ planes: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, samples: Int32, bytesPerSample: Int32,
        planar: Bool, channels: Int32, skip: Int32 = 0
    ) throws(MediaError) {
        guard samples > skip else { return }
        let planeCount = min(planar ? Int(channels) : 1, planeCapacity)
        let stride = planar ? bytesPerSample : bytesPerSample * channels
        for index in 0..<planeCount {
            shifted[index] = planes[index].map { UnsafeMutableRawPointer($0 + Int(skip * stride)) }
        }
        let count = samples - skip
        let written = av_audio_fifo_write(fifo, shifted, count)
        if written < count {
            throw MediaError(call: "av_audio_fifo_write", code: written < 0 ? written : reel_averror(ENOMEM))
        }
    }

    /// Moves `count` samples into `frame` (whose buffers hold at least that many).
    func read(into frame: UnsafeMutablePointer<AVFrame>, count: Int32) throws(MediaError) {
        let read = UnsafeMutableRawPointer(frame.pointee.extended_data).withMemoryRebound(
            to: UnsafeMutableRawPointer?.self, capacity: 8
        ) { av_audio_fifo_read(fifo, $0, count) }
        if read < count {
            throw MediaError(call: "av_audio_fifo_read", code: read < 0 ? read : reel_averror(EIO))
        }
    }
}
