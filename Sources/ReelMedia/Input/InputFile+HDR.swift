internal import CFFmpeg

extension InputFile {
    /// Fills a video stream's dynamic range and HDR facts from its tags and its stream side data
    /// (Dolby Vision configuration, mastering display, content light level).
    static func describeDynamicRange(_ stream: UnsafeMutablePointer<AVStream>, into info: inout StreamInfo) {
        info.dolbyVision = dolbyVisionConfiguration(of: stream)
        var size: Int = 0
        if let data = av_stream_get_side_data(stream, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size),
            size >= MemoryLayout<AVMasteringDisplayMetadata>.size
        {
            info.masteringDisplay = data.withMemoryRebound(to: AVMasteringDisplayMetadata.self, capacity: 1) {
                masteringDisplay($0.pointee)
            }
        }
        if let data = av_stream_get_side_data(stream, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size),
            size >= MemoryLayout<AVContentLightMetadata>.size
        {
            info.contentLightLevel = data.withMemoryRebound(to: AVContentLightMetadata.self, capacity: 1) {
                ContentLightLevel(
                    maxContentLightLevel: Int($0.pointee.MaxCLL), maxFrameAverageLightLevel: Int($0.pointee.MaxFALL))
            }
        }
        if info.masteringDisplay != nil || info.contentLightLevel != nil { info.hdrMetadataSource = .container }
        info.dynamicRange = dynamicRange(
            transfer: stream.pointee.codecpar.pointee.color_trc, dolbyVision: info.dolbyVision)
    }

    /// Dolby Vision when a configuration record says so, else what the transfer characteristic says.
    static func dynamicRange(transfer: AVColorTransferCharacteristic, dolbyVision: DolbyVisionConfiguration?)
        -> DynamicRange
    {
        if dolbyVision != nil { return .dolbyVision }
        switch transfer {
        case AVCOL_TRC_SMPTE2084: return .pq
        case AVCOL_TRC_ARIB_STD_B67: return .hlg
        default: return .sdr
        }
    }

    static func dolbyVisionConfiguration(of stream: UnsafeMutablePointer<AVStream>) -> DolbyVisionConfiguration? {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DOVI_CONF, &size),
            size >= MemoryLayout<AVDOVIDecoderConfigurationRecord>.size
        else { return nil }
        return data.withMemoryRebound(to: AVDOVIDecoderConfigurationRecord.self, capacity: 1) {
            let record = $0.pointee
            return DolbyVisionConfiguration(
                versionMajor: Int(record.dv_version_major), versionMinor: Int(record.dv_version_minor),
                profile: Int(record.dv_profile), level: Int(record.dv_level),
                rpuPresent: record.rpu_present_flag != 0, enhancementLayerPresent: record.el_present_flag != 0,
                baseLayerPresent: record.bl_present_flag != 0,
                compatibilityID: Int(record.dv_bl_signal_compatibility_id))
        }
    }

    static func masteringDisplay(_ metadata: AVMasteringDisplayMetadata) -> MasteringDisplay {
        var display = MasteringDisplay()
        func point(_ pair: (AVRational, AVRational)) -> Chromaticity? {
            guard pair.0.den != 0, pair.1.den != 0 else { return nil }
            return Chromaticity(x: av_q2d(pair.0), y: av_q2d(pair.1))
        }
        if metadata.has_primaries != 0 {
            display.red = point(metadata.display_primaries.0)
            display.green = point(metadata.display_primaries.1)
            display.blue = point(metadata.display_primaries.2)
            display.whitePoint = point(metadata.white_point)
        }
        if metadata.has_luminance != 0 {
            if metadata.min_luminance.den != 0 { display.minLuminance = av_q2d(metadata.min_luminance) }
            if metadata.max_luminance.den != 0 { display.maxLuminance = av_q2d(metadata.max_luminance) }
        }
        return display
    }

    /// The facts only the first packets and frame tell: Dolby Vision RPU NAL units in the first
    /// packet, and, for an HDR stream whose container carries no static metadata, the mastering
    /// display and content light level of the first frame's SEI. Reads at most a few dozen packets and
    /// decodes one frame of the best video stream; anything it cannot read stays unknown.
    func withFirstFrameFacts() -> MediaInfo {
        var info = self.info
        guard var video = info.bestVideoStream, video.kind == .video, !video.isAttachedPicture,
            let range = video.dynamicRange
        else { return info }
        let stream = stream(video.index)
        let isHEVC = stream.pointee.codecpar.pointee.codec_id == AV_CODEC_ID_HEVC
        let wantsMetadata = range.isHDR && video.hdrMetadataSource == nil
        guard isHEVC || wantsMetadata else { return info }
        guard let packet = try? Packet(), let frame = try? Frame() else { return info }
        let decoder = wantsMetadata ? try? Decoder(stream: stream, index: video.index, threads: 1) : nil
        var sawPacket = false
        var decoded = false
        for _ in 0..<64 {
            guard (try? read(into: packet)) == true else { break }
            defer { packet.unref() }
            guard packet.streamIndex == video.index else { continue }
            if !sawPacket {
                sawPacket = true
                if isHEVC { video.hasDolbyVisionRPU = InputFile.carriesRPU(packet.pointer.pointee, stream) }
            }
            guard let decoder, !decoded else { break }
            try? decoder.feed(packet) { () throws(MediaError) in
                if !decoded, (try? decoder.receive(frame)) == .produced {
                    decoded = true
                    InputFile.readFrameMetadata(frame.pointer, into: &video)
                    frame.unref()
                }
            }
            if decoded { break }
        }
        if let decoder, !decoded {
            // A short stream: drain what the decoder holds.
            try? decoder.feed(nil) { () throws(MediaError) in
                if (try? decoder.receive(frame)) == .produced {
                    decoded = true
                    InputFile.readFrameMetadata(frame.pointer, into: &video)
                    frame.unref()
                }
            }
        }
        if let index = info.streams.firstIndex(where: { $0.index == video.index }) { info.streams[index] = video }
        info.bestVideoStream = video
        return info
    }

    private static func readFrameMetadata(_ frame: UnsafeMutablePointer<AVFrame>, into info: inout StreamInfo) {
        if let side = av_frame_get_side_data(frame, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA),
            side.pointee.size >= MemoryLayout<AVMasteringDisplayMetadata>.size
        {
            info.masteringDisplay = side.pointee.data.withMemoryRebound(
                to: AVMasteringDisplayMetadata.self, capacity: 1
            ) { masteringDisplay($0.pointee) }
        }
        if let side = av_frame_get_side_data(frame, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL),
            side.pointee.size >= MemoryLayout<AVContentLightMetadata>.size
        {
            info.contentLightLevel = side.pointee.data.withMemoryRebound(
                to: AVContentLightMetadata.self, capacity: 1
            ) {
                ContentLightLevel(
                    maxContentLightLevel: Int($0.pointee.MaxCLL), maxFrameAverageLightLevel: Int($0.pointee.MaxFALL))
            }
        }
        if info.masteringDisplay != nil || info.contentLightLevel != nil { info.hdrMetadataSource = .bitstream }
    }

    /// Whether an HEVC packet holds a NAL unit of type 62, where Dolby Vision puts its RPU. Packets
    /// are length-prefixed when the stream has an `hvcC` record (MP4, Matroska), Annex B otherwise.
    static func carriesRPU(_ packet: AVPacket, _ stream: UnsafeMutablePointer<AVStream>) -> Bool {
        guard let data = packet.data, packet.size > 0 else { return false }
        let bytes = UnsafeBufferPointer(start: data, count: Int(packet.size))
        let parameters = stream.pointee.codecpar.pointee
        var lengthSize = 0
        if let extra = parameters.extradata, parameters.extradata_size > 22, extra[0] == 1 {
            lengthSize = Int(extra[21] & 3) + 1
        }
        func isRPU(_ header: UInt8) -> Bool { (header >> 1) & 0x3f == 62 }
        if lengthSize > 0 {
            var offset = 0
            while offset + lengthSize < bytes.count {
                var length = 0
                for index in 0..<lengthSize { length = length << 8 | Int(bytes[offset + index]) }
                offset += lengthSize
                guard length > 0, offset + length <= bytes.count else { return false }
                if isRPU(bytes[offset]) { return true }
                offset += length
            }
            return false
        }
        // Annex B: NAL units follow 00 00 01 start codes.
        var index = 0
        while index + 3 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if isRPU(bytes[index + 3]) { return true }
                index += 3
            } else {
                index += 1
            }
        }
        return false
    }
}
