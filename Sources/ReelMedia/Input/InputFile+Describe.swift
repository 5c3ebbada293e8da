internal import CFFmpeg
internal import CFFmpegShim

extension InputFile {
    /// Reads the facts of an opened, probed context into Swift values.
    static func describe(
        _ context: UnsafeMutablePointer<AVFormatContext>, path: String, fileBytes: Int64
    ) -> MediaInfo {
        let format = context.pointee
        let nopts = reel_nopts_value()
        var streams: [StreamInfo] = []
        for index in 0..<Int(format.nb_streams) {
            guard let stream = format.streams[index] else { continue }
            streams.append(describe(stream, index: index))
        }
        let duration = format.duration == nopts ? 0 : Double(format.duration) / Double(AV_TIME_BASE)
        let start = format.start_time == nopts ? 0 : Double(format.start_time) / Double(AV_TIME_BASE)
        var info = MediaInfo(
            path: path,
            formatName: String(cString: format.iformat.pointee.name),
            formatLongName: format.iformat.pointee.long_name.map { String(cString: $0) } ?? "",
            durationSeconds: max(0, duration),
            startSeconds: start,
            bitRate: format.bit_rate > 0 ? Int(format.bit_rate) : nil,
            fileBytes: fileBytes,
            metadata: readDictionary(format.metadata),
            streams: streams)
        let video = av_find_best_stream(context, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        let preferred = video >= 0 && !streams[Int(video)].isAttachedPicture ? streams[Int(video)] : nil
        (info.bestVideoStream, info.videoStreamChoice) = MediaInfo.chooseVideo(streams, preferred: preferred)
        let audio = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, video >= 0 ? video : -1, nil, 0)
        if audio >= 0 { info.bestAudioStream = streams[Int(audio)] }
        return info
    }

    static func describe(_ stream: UnsafeMutablePointer<AVStream>, index: Int) -> StreamInfo {
        let parameters = stream.pointee.codecpar.pointee
        let kind: StreamKind
        switch parameters.codec_type {
        case AVMEDIA_TYPE_VIDEO: kind = .video
        case AVMEDIA_TYPE_AUDIO: kind = .audio
        case AVMEDIA_TYPE_SUBTITLE: kind = .subtitle
        case AVMEDIA_TYPE_DATA: kind = .data
        case AVMEDIA_TYPE_ATTACHMENT: kind = .attachment
        default: kind = .unknown
        }
        let timeBase = Rational(Int(stream.pointee.time_base.num), Int(stream.pointee.time_base.den))
        var info = StreamInfo(
            index: index, kind: kind, codec: String(cString: avcodec_get_name(parameters.codec_id)),
            timeBase: timeBase)
        if let profile = avcodec_profile_name(parameters.codec_id, parameters.profile) {
            info.profile = String(cString: profile)
        }
        info.codecTag = fourCC(parameters.codec_tag)
        info.isDefault = (stream.pointee.disposition & AV_DISPOSITION_DEFAULT) != 0
        info.isAttachedPicture = (stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC) != 0
        if stream.pointee.duration != reel_nopts_value(), stream.pointee.duration > 0 {
            info.durationSeconds = Double(stream.pointee.duration) * timeBase.value
        }
        if stream.pointee.start_time != reel_nopts_value() {
            info.startSeconds = Double(stream.pointee.start_time) * timeBase.value
        }
        if stream.pointee.nb_frames > 0 { info.frameCount = Int(stream.pointee.nb_frames) }
        if parameters.bit_rate > 0 { info.bitRate = Int(parameters.bit_rate) }
        let metadata = readDictionary(stream.pointee.metadata)
        info.language = metadata["language"].flatMap { $0 == "und" ? nil : $0 }

        switch kind {
        case .video:
            info.width = Int(parameters.width)
            info.height = Int(parameters.height)
            let sar =
                parameters.sample_aspect_ratio.num > 0
                ? parameters.sample_aspect_ratio : stream.pointee.sample_aspect_ratio
            info.sampleAspectRatio = sar.num > 0 && sar.den > 0 ? Rational(Int(sar.num), Int(sar.den)) : Rational(1, 1)
            let orientation = orientation(of: stream)
            info.rotation = orientation.rotation
            info.isMirrored = orientation.mirrored
            let average = stream.pointee.avg_frame_rate
            let base = stream.pointee.r_frame_rate
            if average.num > 0, average.den > 0 {
                info.frameRate = Rational(Int(average.num), Int(average.den))
            } else if base.num > 0, base.den > 0 {
                info.frameRate = Rational(Int(base.num), Int(base.den))
            }
            if average.num > 0, base.num > 0 {
                let ratio = av_q2d(base) / av_q2d(average)
                info.isVariableFrameRate = abs(ratio - 1) > 0.01
            }
            let pixelFormat = AVPixelFormat(rawValue: parameters.format)
            if let name = av_get_pix_fmt_name(pixelFormat) { info.pixelFormat = String(cString: name) }
            if let descriptor = av_pix_fmt_desc_get(pixelFormat) {
                info.bitDepth = Int(descriptor.pointee.comp.0.depth)
                if descriptor.pointee.nb_components >= 3, (descriptor.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB)) == 0
                {
                    switch (descriptor.pointee.log2_chroma_w, descriptor.pointee.log2_chroma_h) {
                    case (1, 1): info.chromaSubsampling = "4:2:0"
                    case (1, 0): info.chromaSubsampling = "4:2:2"
                    case (0, 0): info.chromaSubsampling = "4:4:4"
                    case (2, 0): info.chromaSubsampling = "4:1:1"
                    default: break
                    }
                }
            }
            info.colorTransfer = nameOrNil(
                av_color_transfer_name(parameters.color_trc), unspecified: parameters.color_trc == AVCOL_TRC_UNSPECIFIED
            )
            info.colorPrimaries = nameOrNil(
                av_color_primaries_name(parameters.color_primaries),
                unspecified: parameters.color_primaries == AVCOL_PRI_UNSPECIFIED)
            info.colorSpace = nameOrNil(
                av_color_space_name(parameters.color_space),
                unspecified: parameters.color_space == AVCOL_SPC_UNSPECIFIED)
            info.colorRange = nameOrNil(
                av_color_range_name(parameters.color_range),
                unspecified: parameters.color_range == AVCOL_RANGE_UNSPECIFIED)
            describeDynamicRange(stream, into: &info)
        case .audio:
            info.sampleRate = Int(parameters.sample_rate)
            var layout = parameters.ch_layout
            info.channels = Int(layout.nb_channels)
            var buffer = [CChar](repeating: 0, count: 128)
            if av_channel_layout_describe(&layout, &buffer, buffer.count) > 0 {
                info.channelLayout = String(
                    decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            if let name = av_get_sample_fmt_name(AVSampleFormat(rawValue: parameters.format)) {
                info.sampleFormat = String(cString: name)
            }
        default:
            break
        }
        return info
    }

    /// How a player orients the frames, from the display matrix: a left-right mirror (when the
    /// matrix's determinant is negative), then a clockwise rotation snapped to a quarter turn.
    ///
    /// The matrix maps a source point (p, q) to (a·p + c·q, b·p + d·q), where a, b, c, d are
    /// `matrix[0]`, `[1]`, `[3]`, `[4]` (ISO/IEC 14496-12 `tkhd`, FFmpeg's display matrix). A mirror H
    /// followed by a rotation R is the product H·R, so R = H·M: its first row is (−a, −b).
    static func orientation(of stream: UnsafeMutablePointer<AVStream>) -> (rotation: Int, mirrored: Bool) {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size),
            size >= 9 * MemoryLayout<Int32>.size
        else { return (0, false) }
        let matrix = data.withMemoryRebound(to: Int32.self, capacity: 9) { pointer in
            (0..<9).map { Double(pointer[$0]) / 65536 }
        }
        let (a, b, c, d) = (matrix[0], matrix[1], matrix[3], matrix[4])
        let mirrored = a * d - b * c < 0
        let (cosine, sine) = mirrored ? (-a, -b) : (a, b)
        guard cosine != 0 || sine != 0 else { return (0, false) }
        // Clockwise in picture coordinates (y down): a quarter turn maps the top edge to the right.
        let degrees = atan2(sine, cosine) * 180 / .pi
        guard degrees.isFinite else { return (0, false) }
        var clockwise = Int(degrees.rounded())
        clockwise = ((clockwise % 360) + 360) % 360
        // Snap to the nearest quarter turn; other angles are not representable without resampling.
        return (((clockwise + 45) / 90 % 4) * 90, mirrored)
    }

    private static func nameOrNil(_ name: UnsafePointer<CChar>?, unspecified: Bool) -> String? {
        guard !unspecified, let name else { return nil }
        return String(cString: name)
    }

    static func fourCC(_ tag: UInt32) -> String? {
        guard tag != 0 else { return nil }
        let bytes = [tag & 0xff, (tag >> 8) & 0xff, (tag >> 16) & 0xff, (tag >> 24) & 0xff].map { UInt8($0) }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Probes files without decoding them.
public enum MediaProbe {
    /// Opens `path` under `policy` and returns what it contains. Throws `MediaError` with
    /// `.unreadableInput` (missing, not a regular file, not permitted or corrupt) or `.limitExceeded`.
    public static func probe(path: String, policy: InputPolicy = .standard) throws(MediaError) -> MediaInfo {
        // Probing decodes a few frames on the caller's thread; the export that follows runs on other
        // threads (other malloc arenas), which would never reuse what the probe freed.
        defer { reel_trim_heap() }
        return try InputFile(path: path, policy: policy).withFirstFrameFacts()
    }

    /// Reads only the header of an MP4/QuickTime or Matroska file (no frames decoded): enough for
    /// sizes, codecs and duration of a file Reel just wrote. `demuxer` (an FFmpeg demuxer name the
    /// standard allowlist holds, such as `mov`) opens the file with that demuxer instead of probing
    /// for one, for a caller that recognised the format from the file's first bytes.
    public static func probeHeader(path: String, demuxer: String? = nil) throws(MediaError) -> MediaInfo {
        try InputFile(path: path, policy: .standard, analysis: .headerSuffices, demuxer: demuxer).info
    }

    /// Where a copy of `path` from `seconds` (from the start) has to begin: the time of the video's
    /// keyframe at or before it, from the header's index (its decoding time, which B-frames put up to
    /// a few frames early), or nil when the file has no video or its header has no index (Matroska
    /// without cues, MPEG-TS). `byteRange` names the media inside a larger file (a Motion Photo's).
    public static func keyframeSeconds(atOrBefore seconds: Double, path: String, byteRange: Range<Int64>? = nil)
        throws(MediaError) -> Double?
    {
        let input = try InputFile(path: path, policy: .standard, analysis: .headerSuffices, byteRange: byteRange)
        guard let index = input.info.streams.firstIndex(where: { $0.kind == .video && !$0.isAttachedPicture }) else {
            return nil
        }
        let stream = input.stream(index)
        let timeBase = stream.pointee.time_base
        guard timeBase.num > 0, timeBase.den > 0 else { return nil }
        let start = stream.pointee.start_time == reel_nopts_value() ? 0 : stream.pointee.start_time
        let target = start + Int64((seconds * Double(timeBase.den) / Double(timeBase.num)).rounded(.down))
        let position = av_index_search_timestamp(stream, target, AVSEEK_FLAG_BACKWARD)
        guard position >= 0, let entry = avformat_index_get_entry(stream, position) else { return nil }
        return max(0, Double(entry.pointee.timestamp - start) * Double(timeBase.num) / Double(timeBase.den))
    }

    /// Checks, without opening it as media, that `path` is a readable regular file inside the policy's
    /// allowed roots and under its size limit.
    public static func checkAccess(path: String, policy: InputPolicy = .standard) throws(MediaError) {
        _ = try InputFile.checkRegularFile(path, policy: policy)
    }
}

extension InputFile {
    /// The timestamps of stream `index`'s keyframes from the header's index, on the stream's clock,
    /// sorted (their decoding times, which B-frames put up to a few frames early); empty when the
    /// header has no index (Matroska without cues, MPEG-TS).
    func keyframeTimestamps(ofStream index: Int) -> [Int64] {
        let stream = self.stream(index)
        var times: [Int64] = []
        let count = avformat_index_get_entries_count(stream)
        for position in 0..<max(0, count) {
            guard let entry = avformat_index_get_entry(stream, position), entry.pointee.flags & AVINDEX_KEYFRAME != 0,
                let time = sane(entry.pointee.timestamp)
            else { continue }
            times.append(time)
        }
        return times.sorted()
    }

    /// `keyframeTimestamps(ofStream:)` in seconds from the stream's start.
    func keyframeSeconds(ofStream index: Int) -> [Double] {
        let stream = self.stream(index)
        let timeBase = stream.pointee.time_base
        guard timeBase.num > 0, timeBase.den > 0 else { return [] }
        let start = stream.pointee.start_time == reel_nopts_value() ? 0 : stream.pointee.start_time
        return keyframeTimestamps(ofStream: index).map { max(0, Double($0 - start) * av_q2d(timeBase)) }
    }
}
