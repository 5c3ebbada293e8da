import Foundation

/// Sources whose real length is not what their container declares, or whose frames are unevenly
/// spaced, and a damaged stream that aborts FFmpeg's MPEG-4 decoder: what ffmpeg converts and Reel
/// must too. All made with ffmpeg at test time; the ones ffmpeg cannot write wrong are patched.
extension Fixtures {
    /// 96x64, five frames at 0, 0.12, 1.12, 1.20 and 1.72 s, the last shown for 0.52 s (`-final_delay`):
    /// 2.24 s in all.
    public static let gifLastDelay = Recipe(
        "last-delay.gif",
        [
            "-f", "lavfi", "-i",
            "testsrc2=size=96x64:rate=10:duration=0.5,settb=1/100,"
                + "setpts='if(eq(N,0),0,if(eq(N,1),12,if(eq(N,2),112,if(eq(N,3),120,172))))'",
            "-fps_mode", "vfr", "-final_delay", "52", "-f", "gif",
        ])

    /// 96x64, frames at 0, 0.2 and 0.4 s, then the last two held 2 s each: 4.4 s in all.
    public static let gifHeld = Recipe(
        "held.gif",
        [
            "-f", "lavfi", "-i",
            "testsrc2=size=96x64:rate=10:duration=0.4,settb=1/100,"
                + "setpts='if(eq(N,0),0,if(eq(N,1),20,if(eq(N,2),40,240)))'",
            "-fps_mode", "vfr", "-final_delay", "200", "-f", "gif",
        ])

    /// Theora (libtheora) at 25 fps with three frames, the 1st, 11th and 21st of a second: FFmpeg's Ogg
    /// demuxer reads them at 0, 0.04 and 0.44 s, each 0.04 s long, and the stream as lasting 0.84 s
    /// (its last granule position). ffmpeg converts it to 0.48 s.
    public static let sparseTheora = Recipe(
        "sparse.ogv",
        [
            "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=25:duration=1,select='eq(n\\,0)+eq(n\\,10)+eq(n\\,20)'",
            "-fps_mode", "passthrough", "-c:v", "libtheora", "-q:v", "5",
        ])

    /// H.264 + AAC in FLV: 1 s of video, 1.1 s of audio; onMetaData says 1.12 s.
    public static let flv = Recipe(
        "plain.flv",
        video("320x180", rate: 25) + [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1.1",
        ] + h264 + aac)

    /// `flv` with its onMetaData duration rewritten to 46.9 s.
    public static let flvLyingDuration = Recipe(
        "lying.flv", ["-i", "$0", "-c", "copy"], inputs: [flv],
        patch: { url in try setFLVDuration(url, seconds: 46.9) })

    /// `flv` with its onMetaData duration rewritten to the video's 1.0 s: the audio runs 0.1 s longer.
    public static let flvAudioLonger = Recipe(
        "audio-longer.flv", ["-i", "$0", "-c", "copy"], inputs: [flv],
        patch: { url in try setFLVDuration(url, seconds: 1.0) })

    /// WMV (WMV2 + WMA2): 1 s of video, 1.2 s of audio. FFmpeg's ASF demuxer gives both streams the
    /// file's duration.
    public static let wmvAudioLonger = Recipe(
        "audio-longer.wmv",
        video("320x180", rate: 25) + [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1.2", "-c:v", "wmv2", "-c:a", "wmav2",
        ])

    /// WMV: 1.2 s of video, 1 s of audio.
    public static let wmvAudioShorter = Recipe(
        "audio-shorter.wmv",
        video("320x180", rate: 25, seconds: 1.2) + [
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1", "-c:v", "wmv2", "-c:a", "wmav2",
        ])

    /// MPEG-PS (MPEG-2 + MP2, 1 s) with one more audio packet at its end, stamped 46.9 s and holding no
    /// MP2 frame: FFmpeg's duration estimate (from the last timestamps) says 46.4 s, while decoding
    /// finds 1 s; ffmpeg converts it to 1 s.
    public static let psBogusDuration = Recipe(
        "bogus-duration.mpg",
        video("320x180", rate: 25) + audio() + ["-c:v", "mpeg2video", "-c:a", "mp2", "-f", "vob"],
        patch: { url in try appendStrayAudioPacket(url, atSeconds: 46.9) })

    /// MPEG-4 Part 2 + MP3 in AVI (the fuzzer's seed) with its first 16 bytes zeroed: FFmpeg then takes
    /// it for a raw MPEG-4 stream, AVI chunks and MP3 frames included. A Passthrough copies that stream
    /// into MP4; decoding the copy (as verification did) aborts FFmpeg 5.1 (`Assertion frame->buf[0]
    /// failed at libavcodec/decode.c:502`).
    public static let damagedMPEG4 = Recipe(
        "damaged-mpeg4.avi",
        [
            "-f", "lavfi", "-i", "testsrc2=size=176x96:rate=30:duration=1", "-f", "lavfi", "-i",
            "sine=frequency=440:sample_rate=44100:duration=1", "-c:v", "mpeg4", "-q:v", "5", "-c:a", "libmp3lame",
            "-b:a", "64k", "-ac", "2", "-shortest", "-f", "avi",
        ],
        patch: { url in
            var data = try Data(contentsOf: url)
            data.replaceSubrange(0..<16, with: Data(count: 16))
            try data.write(to: url)
        })

    /// Rewrites the `duration` number of an FLV's onMetaData (an AMF double after the key).
    static func setFLVDuration(_ url: URL, seconds: Double) throws {
        var data = try Data(contentsOf: url)
        guard let key = data.range(of: Data("duration".utf8)), data[key.upperBound] == 0 else {
            throw ToolFailure(message: "\(url.lastPathComponent) has no onMetaData duration")
        }
        let start = key.upperBound + 1
        data.replaceSubrange(start..<(start + 8), with: withUnsafeBytes(of: seconds.bitPattern.bigEndian) { Data($0) })
        try data.write(to: url)
    }

    /// Inserts, before an MPEG-PS file's end code, a pack and an audio PES packet (stream 0xC0) with a
    /// PTS of `seconds` and 32 bytes that are no MP2 frame.
    static func appendStrayAudioPacket(_ url: URL, atSeconds seconds: Double) throws {
        var data = try Data(contentsOf: url)
        let clock = UInt64(seconds * 90_000)
        func timestamp(_ value: UInt64) -> [UInt8] {
            [
                UInt8(0x20 | ((value >> 29) & 0x0E) | 1), UInt8((value >> 22) & 0xFF),
                UInt8(((value >> 14) & 0xFE) | 1), UInt8((value >> 7) & 0xFF), UInt8(((value << 1) & 0xFE) | 1),
            ]
        }
        // MPEG-2 pack header: '01', SCR with markers, SCR extension 0, mux rate 20000, no stuffing.
        var scr: UInt64 = 1 << 46
        scr |= ((clock >> 30) & 7) << 43 | 1 << 42 | ((clock >> 15) & 0x7FFF) << 27 | 1 << 26
        scr |= (clock & 0x7FFF) << 11 | 1 << 10 | 1
        var pack: [UInt8] = [0, 0, 1, 0xBA]
        for shift in stride(from: 40, through: 0, by: -8) { pack.append(UInt8((scr >> UInt64(shift)) & 0xFF)) }
        let rate: UInt32 = 20_000 << 2 | 3
        pack += [UInt8((rate >> 16) & 0xFF), UInt8((rate >> 8) & 0xFF), UInt8(rate & 0xFF), 0xF8]
        let header: [UInt8] = [0x81, 0x80, 5] + timestamp(clock)
        let payload = [UInt8](repeating: 0x55, count: 32)
        let length = header.count + payload.count
        let pes: [UInt8] = [0, 0, 1, 0xC0, UInt8(length >> 8), UInt8(length & 0xFF)] + header + payload
        let end = data.range(of: Data([0, 0, 1, 0xB9]), options: .backwards)?.lowerBound ?? data.endIndex
        data.insert(contentsOf: pack + pes, at: end)
        try data.write(to: url)
    }
}
