import Foundation
internal import ReelMedia

/// What a ladder export wrote, per rendition, as its playlists say it.
public struct LadderResult: Sendable, Codable, Equatable {
    /// One rendition (a video rung or the audio).
    public struct Rendition: Sendable, Codable, Equatable {
        /// Its playlist, relative to the folder (`v0/index.m3u8`).
        public var playlist: String
        public var codecs: String
        public var width: Int?
        public var height: Int?
        /// The highest bit rate of any one segment (bytes × 8 / its duration), bits per second.
        public var peakBitrate: Int
        /// All segments' bytes × 8 over their total duration.
        public var averageBitrate: Int
        public var segments: Int
        public var durationSeconds: Double
    }
    /// The master playlist's name inside the folder.
    public var master: String
    public var video: [Rendition]
    public var audio: Rendition?
    /// Rungs asked for but not written (above the source's size), as `WxH`.
    public var dropped: [String]
    /// Every file written, relative to the folder.
    public var files: [String]
}

/// Writes a ladder's HLS playlists from what was written (`LadderOutcome`), never from encoder
/// settings: per-variant BANDWIDTH = the peak segment bit rate of the rung plus the audio's, and
/// AVERAGE-BANDWIDTH the same with the means (RFC 8216 §4.3.4.2), from the bytes and durations of
/// the segments on disk; CODECS from the streams' own parameter sets; one EXT-X-TARGETDURATION for
/// every playlist (the largest EXTINF rounded half up, RFC 8216bis); audio as one EXT-X-MEDIA group
/// every variant shares.
enum LadderPlaylists {
    static let master = "master.m3u8"
    static let media = "index.m3u8"
    static let audioGroup = "aac"

    /// Peak and average bit rates of a track, bits per second (rounded up).
    static func bitrates(_ track: LadderTrack) -> (peak: Int, average: Int) {
        var peak = 0.0
        var bytes: Int64 = 0
        var seconds = 0.0
        for segment in track.files.segments where segment.durationSeconds > 0 {
            peak = max(peak, Double(segment.bytes) * 8 / segment.durationSeconds)
            bytes += segment.bytes
            seconds += segment.durationSeconds
        }
        let average = seconds > 0 ? Double(bytes) * 8 / seconds : 0
        return (Int(peak.rounded(.up)), Int(average.rounded(.up)))
    }

    /// The target duration every playlist carries.
    static func targetDuration(_ tracks: [LadderTrack]) -> Int {
        let longest = tracks.flatMap(\.files.segments).map(\.durationSeconds).max() ?? 1
        return max(1, Int((longest + 0.5).rounded(.down)))
    }

    /// The playlists' text by path inside the folder, and the result they describe.
    static func make(_ outcome: LadderOutcome, language: String?, dropped: [String]) -> (
        files: [(path: String, text: String)], result: LadderResult
    ) {
        let all = outcome.video + (outcome.audio.map { [$0] } ?? [])
        let target = targetDuration(all)
        var files: [(String, String)] = []
        var renditions: [LadderResult.Rendition] = []
        for track in all {
            let path = track.folder + "/" + media
            files.append((path, mediaPlaylist(track, target: target)))
            let rates = bitrates(track)
            renditions.append(
                LadderResult.Rendition(
                    playlist: path, codecs: track.codecs, width: track.width, height: track.height,
                    peakBitrate: rates.peak, averageBitrate: rates.average, segments: track.files.segments.count,
                    durationSeconds: track.files.segments.reduce(0) { $0 + $1.durationSeconds }))
        }
        let audio = outcome.audio != nil ? renditions.removeLast() : nil
        var lines = ["#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-INDEPENDENT-SEGMENTS"]
        if let audio, let track = outcome.audio {
            // Apple: LANGUAGE on every non-video rendition; `und` when the source names none.
            lines.append(
                "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"\(audioGroup)\",NAME=\"Audio\",LANGUAGE=\"\(language ?? "und")\","
                    + "DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"\(track.channels ?? 2)\",URI=\"\(audio.playlist)\"")
        }
        for (rendition, track) in zip(renditions, outcome.video) {
            var attributes = [
                "BANDWIDTH=\(rendition.peakBitrate + (audio?.peakBitrate ?? 0))",
                "AVERAGE-BANDWIDTH=\(rendition.averageBitrate + (audio?.averageBitrate ?? 0))",
                "CODECS=\"\(([track.codecs] + (audio.map { [$0.codecs] } ?? [])).joined(separator: ","))\"",
            ]
            if let width = track.width, let height = track.height { attributes.append("RESOLUTION=\(width)x\(height)") }
            if let rate = track.frameRate { attributes.append(String(format: "FRAME-RATE=%.3f", rate)) }
            if audio != nil { attributes.append("AUDIO=\"\(audioGroup)\"") }
            attributes.append("CLOSED-CAPTIONS=NONE")
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(rendition.playlist)
        }
        files.insert((master, lines.joined(separator: "\n") + "\n"), at: 0)
        var written = files.map(\.0)
        for track in all {
            written.append(track.folder + "/" + track.files.initFile)
            written += track.files.segments.map { track.folder + "/" + $0.file }
        }
        let result = LadderResult(
            master: master, video: renditions, audio: audio, dropped: dropped, files: written.sorted())
        return (files, result)
    }

    /// One rendition's media playlist: EXT-X-MAP for its init segment, each segment's real duration.
    static func mediaPlaylist(_ track: LadderTrack, target: Int) -> String {
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:6", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:0",
            "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS", "#EXT-X-MAP:URI=\"\(track.files.initFile)\"",
        ]
        for segment in track.files.segments {
            // Microseconds: any run of segments sums to its real duration well within a frame.
            lines.append(String(format: "#EXTINF:%.6f,", segment.durationSeconds))
            lines.append(segment.file)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }
}
