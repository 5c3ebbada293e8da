internal import CFFmpeg
internal import CFFmpegShim

/// A Passthrough export: copies the chosen streams' packets unchanged into a new container
/// (remux), with faststart. A time range copies from the keyframe at or before its start, with an
/// edit list that starts playback at the start exactly. One thread copies (copying is cheap, the
/// disk is the limit); another starts writeback and makes the closing fsync (`BackgroundSync`),
/// which the caller waits for (`TranscodeOutcome.sync`) before publishing the file.
final class RemuxPipeline {
    private let input: InputFile
    private let output: OutputFile
    private let cancel: CancellationFlag
    private let progress: (TranscodeProgress) -> Void
    private let packet: Packet
    /// Input stream index → output stream.
    private var mapping: [Int: UnsafeMutablePointer<AVStream>] = [:]
    /// Input stream index → one frame (or audio packet) at its nominal rate, in its time base: the
    /// duration a packet without one gets (`FrameTiming`).
    private var nominals: [Int: Int64] = [:]
    private let window: TimeWindow
    /// Source time that becomes 0: the window's origin (a cut's packets from the keyframe before it
    /// come out with negative times, which the mov muxer turns into an edit list).
    private let originMicroseconds: Int64
    private let videoIndex: Int?
    private var packets = 0
    /// Bytes reserved at the front for the moov (nil: faststart rewrites the file at the end).
    private let reservedMoovBytes: Int?
    /// Dolby Vision configurations to write into the finished file, by output track.
    private var dolbyVision: [(track: Int, box: DolbyVisionBox)] = []

    /// Creates the output with a copy of each of `streams` and writes its header. With `reserveMoov`
    /// (and faststart), room for the moov is reserved at the front; when it turns out too small,
    /// `run` throws `moovReservationTooSmall` and the remux is redone without.
    init(
        plan: TranscodePlan, streams: [Int], input: InputFile, cancel: CancellationFlag, heartbeat: Heartbeat,
        progress: @escaping (TranscodeProgress) -> Void, reserveMoov: Bool = true
    ) throws(MediaError) {
        self.input = input
        self.cancel = cancel
        self.progress = progress
        packet = try Packet()
        let info = input.info
        window = TimeWindow(plan: plan, info: info)
        originMicroseconds = window.originMicroseconds
        videoIndex = streams.first { info.streams[$0].kind == .video }

        // Writeback and the closing fsync off this thread: the copy only moves bytes, so the I/O
        // submission would otherwise be a good part of its time, and the fsync can run while the
        // file is verified (`BackgroundSync`).
        output = try OutputFile(path: plan.outputPath, muxer: plan.container.muxer, backgroundSync: true)
        output.heartbeat = heartbeat
        for index in streams {
            let source = input.stream(index)
            let parameters = source.pointee.codecpar!
            let name = String(cString: avcodec_get_name(parameters.pointee.codec_id))
            guard output.canHold(parameters.pointee.codec_id) else {
                throw MediaError(
                    kind: .unsupportedCodec, call: "avformat_query_codec",
                    message: "\(plan.container.muxer) cannot hold \(name) (stream \(index)) without re-encoding")
            }
            let stream = try output.addStream()
            try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters), "avcodec_parameters_copy")
            // Let the muxer pick the tag for its container, except HEVC, which Apple wants as 'hvc1'.
            stream.pointee.codecpar.pointee.codec_tag =
                parameters.pointee.codec_id == AV_CODEC_ID_HEVC ? reel_mktag(0x68, 0x76, 0x63, 0x31) : 0
            stream.pointee.time_base = source.pointee.time_base
            stream.pointee.avg_frame_rate = source.pointee.avg_frame_rate
            stream.pointee.sample_aspect_ratio = source.pointee.sample_aspect_ratio
            stream.pointee.disposition = source.pointee.disposition
            try check(av_dict_copy(&stream.pointee.metadata, source.pointee.metadata, 0), "av_dict_copy")
            // Rotation (display matrix) and other stream side data travel with the stream.
            for sideIndex in 0..<Int(source.pointee.nb_side_data) {
                let side = source.pointee.side_data[sideIndex]
                guard let data = av_stream_new_side_data(stream, side.type, side.size) else {
                    throw MediaError(kind: .internalFailure, call: "av_stream_new_side_data", message: "out of memory")
                }
                data.update(from: side.data, count: side.size)
            }
            mapping[index] = stream
            let kind = info.streams[index].kind
            output.declare(stream: stream.pointee.index, kind: kind, copied: true)
            nominals[index] =
                kind == .audio
                ? FrameTiming.nominal(
                    frameSize: parameters.pointee.frame_size, sampleRate: parameters.pointee.sample_rate,
                    timeBase: source.pointee.time_base)
                : FrameTiming.nominal(
                    rate: av_guess_frame_rate(input.context, source, nil), timeBase: source.pointee.time_base)
            // FFmpeg 5.1's muxer drops the Dolby Vision configuration the side data carries.
            if let box = DolbyVisionBox(of: source) { dolbyVision.append((Int(stream.pointee.index), box)) }
        }
        // Copying is cheap, so faststart's second pass over the file would double the work: reserve
        // room for the moov up front instead (a generous estimate from the sample counts).
        reservedMoovBytes =
            plan.faststart && reserveMoov
            ? MoovEstimate.bytes(input: input, streams: streams, metadata: plan.metadata)
                + dolbyVision.count * 64 : nil
        try output.writeHeader(
            metadata: plan.metadata, options: Transcoder.muxerOptions(plan, reservedMoovBytes: reservedMoovBytes))
    }

    func run() throws(MediaError) -> TranscodeOutcome {
        if window.hasRangeStart { try input.seek(toMicroseconds: originMicroseconds) }
        let hasRangeStart = window.hasRangeStart
        var originSet = !hasRangeStart
        var lastDts: [Int: Int64] = [:]
        var ended: Set<Int> = []
        var mediaSeconds = 0.0
        var lastReported = -1.0
        let share = reservedMoovBytes == nil ? Transcoder.finalizingShareRemux : 0.01
        while true {
            guard try input.read(into: packet, unless: cancel) else { break }
            // Every path drops what it did not hand to the muxer (which leaves the packet blank).
            defer { packet.unref() }
            let index = packet.streamIndex
            guard let stream = mapping[index] else { continue }
            let source = input.stream(index)
            let sourceTimeBase = source.pointee.time_base
            let raw = packet.pointer.pointee
            // Timestamps a hostile file sets near the limits of Int64 are treated as missing.
            packet.pointer.pointee.pts = sane(raw.pts) ?? reel_nopts_value()
            packet.pointer.pointee.dts = sane(raw.dts) ?? reel_nopts_value()
            let time = sane(raw.pts) ?? sane(raw.dts) ?? reel_nopts_value()
            if time == reel_nopts_value() && !originSet {
                // Nothing is written before the first keyframe of a cut.
                continue
            }
            if time != reel_nopts_value() {
                let micro = av_rescale_q(time, sourceTimeBase, reel_time_base_q())
                if let end = window.endMicroseconds {
                    // The video ends at its first packet decoded at or after the range's end: a frame
                    // is never shown before it is decoded (pts ≥ dts), so every frame shown before the
                    // end is in, with the later frames B-frames refer to. Those show past the end until
                    // the edit list is trimmed (`finish`). Other streams end at their first packet
                    // that starts at or after the end. The copy ends when every stream has ended
                    // (audio interleaved behind the video still gets its last packets).
                    let decoded = sane(raw.dts).map { av_rescale_q($0, sourceTimeBase, reel_time_base_q()) } ?? micro
                    if (index == videoIndex ? decoded : micro) >= end {
                        ended.insert(index)
                        if ended.count == mapping.count { break }
                        continue
                    }
                }
                if ended.contains(index) { continue }
                if !originSet {
                    // Start on the first video keyframe at or after the seek point (at or before the
                    // range's start). Timestamps stay relative to the range's start, so what comes
                    // before it is negative and the muxer writes an edit list: players decode from
                    // the keyframe and show from the start exactly.
                    if index == videoIndex || videoIndex == nil, (raw.flags & AV_PKT_FLAG_KEY) != 0 {
                        originSet = true
                    } else {
                        continue
                    }
                }
                // Within a time range, other streams start with the packet that plays at the range's
                // start (its lead-in is hidden by the edit list as well); without one, nothing is
                // dropped (an AAC priming packet sits before zero on purpose).
                if hasRangeStart, index != videoIndex,
                    micro + av_rescale_q(max(raw.duration, 0), sourceTimeBase, reel_time_base_q()) <= originMicroseconds
                {
                    continue
                }
            }
            // The last packet's duration is the stream's end in the file: one without gets the
            // nominal frame's (`FrameTiming`).
            packet.pointer.pointee.duration = FrameTiming.duration(
                own: raw.duration, nominal: nominals[index] ?? 0)
            let offset = av_rescale_q(originMicroseconds, reel_time_base_q(), sourceTimeBase)
            if packet.pointer.pointee.pts != reel_nopts_value() { packet.pointer.pointee.pts -= offset }
            if packet.pointer.pointee.dts != reel_nopts_value() { packet.pointer.pointee.dts -= offset }
            av_packet_rescale_ts(packet.pointer, sourceTimeBase, stream.pointee.time_base)
            let dts = packet.pointer.pointee.dts
            if dts != reel_nopts_value() {
                if let previous = lastDts[index], dts <= previous {
                    // Some containers repeat timestamps; the muxer requires them increasing.
                    packet.pointer.pointee.dts = previous &+ 1
                    if packet.pointer.pointee.pts != reel_nopts_value(), packet.pointer.pointee.pts < previous &+ 1 {
                        packet.pointer.pointee.pts = previous &+ 1
                    }
                }
                lastDts[index] = packet.pointer.pointee.dts
                mediaSeconds = max(mediaSeconds, seconds(packet.pointer.pointee.dts, stream.pointee.time_base))
            }
            packet.pointer.pointee.stream_index = stream.pointee.index
            packet.pointer.pointee.pos = -1
            try output.write(packet)
            packets += 1
            let fraction = min(1, mediaSeconds / window.totalSeconds) * (1 - share)
            if fraction - lastReported >= 0.002 {
                lastReported = fraction
                progress(
                    TranscodeProgress(
                        phase: .transcoding, fraction: fraction, frames: packets, mediaSeconds: mediaSeconds))
            }
        }
        if packets == 0 {
            throw MediaError(kind: .unreadableInput, call: "av_read_frame", message: "the input has no packets to copy")
        }
        Transcoder.reportFinalizing(
            output: output, share: share, frames: packets, mediaSeconds: mediaSeconds, progress: progress)
        let boxes = dolbyVision
        // A cut's end: the edit lists end where the range does (what is copied runs past it).
        let cutSeconds = window.endMicroseconds.map { Double($0 - originMicroseconds) / Double(AV_TIME_BASE) }
        try output.finish(
            reservedMoov: reservedMoovBytes != nil,
            edit: boxes.isEmpty && cutSeconds == nil
                ? nil
                : { (descriptor: Int32) throws(MediaError) in
                    if let cutSeconds, cutSeconds > 0 {
                        _ = try EditListTrim.trim(descriptor: descriptor, toSeconds: cutSeconds)
                    }
                    for (track, box) in boxes { try box.write(toTrack: track, of: descriptor) }
                })
        output.onWrite = nil
        if let cutSeconds, cutSeconds > 0 {
            for stream in mapping.values {
                output.clipWritten(stream: Int(stream.pointee.index), toSeconds: cutSeconds)
            }
        }
        progress(TranscodeProgress(phase: .finalizing, fraction: 1, frames: packets, mediaSeconds: mediaSeconds))
        return TranscodeOutcome(
            bytes: output.bytesWritten, videoFramesEncoded: 0, audioFramesEncoded: 0, packetsCopied: packets,
            written: output.written, lock: try output.lock(), sync: output.pendingSync)
    }
}
