internal import CFFmpeg
internal import CFFmpegShim

extension MediaProbe {
    /// Probes bytes `byteRange` of the regular file at `path` as a media file of their own (a Motion
    /// Photo's embedded MP4), under `policy`: the file must pass the same checks as any input
    /// (allowed roots, size, a regular file), the range must lie inside it, and FFmpeg reads nothing
    /// outside the range (its `subfile` protocol over the resolved path). Returns what FFmpeg reads,
    /// with `fileBytes` the range's length. Throws `MediaError` (`.unreadableInput` when the range is
    /// outside the file or is not media FFmpeg opens; `.limitExceeded` past the policy).
    ///
    /// `decodingFirstFrames` probes as `probe(path:policy:)` does (the first frames decoded for the
    /// facts an export decides on: pixel format, colour); without it only the header is read when it
    /// describes the streams, which keeps validating every Motion Photo of a library cheap.
    public static func probe(
        path: String, byteRange: Range<Int64>, policy: InputPolicy = .standard, decodingFirstFrames: Bool = false
    ) throws(MediaError) -> MediaInfo {
        FFmpegLog.installIfNeeded()
        defer { reel_trim_heap() }
        if decodingFirstFrames {
            return try InputFile(path: path, policy: policy, byteRange: byteRange).withFirstFrameFacts()
        }
        let (resolved, fileBytes) = try InputFile.checkRegularFile(path, policy: policy)
        let url = try InputFile.subfileURL(path: path, resolved: resolved, byteRange: byteRange, fileBytes: fileBytes)
        guard let allocated = avformat_alloc_context() else {
            throw MediaError(kind: .internalFailure, call: "avformat_alloc_context", message: "out of memory")
        }
        var context: UnsafeMutablePointer<AVFormatContext>? = allocated
        let options = try OptionDictionary([
            ("protocol_whitelist", "subfile,file"),
            ("format_whitelist", policy.allowedDemuxers.joined(separator: ",")),
            ("enable_drefs", "0"),
            ("max_streams", String(policy.maxStreams)),
        ])
        let opened = avformat_open_input(&context, url, nil, &options.pointer)
        guard opened >= 0, let context else {
            throw MediaError(
                call: "avformat_open_input", code: opened, kind: .unreadableInput,
                context: "\(path): bytes \(byteRange.lowerBound)..<\(byteRange.upperBound) are not media FFmpeg reads")
        }
        defer {
            var pointer: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&pointer)
        }
        // An MP4's header describes its streams (sizes, codecs, duration): no frame needs decoding,
        // which keeps validating every Motion Photo of a library cheap. Anything else is probed.
        let formatNames = String(cString: context.pointee.iformat.pointee.name).split(separator: ",")
        var described = formatNames.contains("mov") && context.pointee.nb_streams > 0
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let parameters = context.pointee.streams[index]?.pointee.codecpar.pointee else {
                described = false
                break
            }
            if parameters.codec_type == AVMEDIA_TYPE_VIDEO, parameters.width <= 0 || parameters.height <= 0 {
                described = false
            }
        }
        let found = described ? 0 : avformat_find_stream_info(context, nil)
        if found < 0 {
            throw MediaError(
                call: "avformat_find_stream_info", code: found, kind: .unreadableInput,
                context:
                    "\(path): could not read the streams of bytes \(byteRange.lowerBound)..<\(byteRange.upperBound)")
        }
        let info = InputFile.describe(context, path: path, fileBytes: Int64(byteRange.count))
        try InputFile.checkLimits(info, policy: policy)
        return info
    }
}
