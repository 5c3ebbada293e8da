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
    /// The HLS master playlist's name inside the folder (nil when HLS was not asked for).
    public var master: String?
    /// The DASH manifest's name inside the folder (nil when DASH was not asked for).
    public var dash: String?
    public var video: [Rendition]
    public var audio: Rendition?
    /// Rungs asked for but not written (above the source's size), as `WxH`.
    public var dropped: [String]
    /// Every file written, relative to the folder.
    public var files: [String]
    /// A per-title ladder's search (a quality target): each rung's CRF and score, and the rungs it
    /// left out; nil without a target.
    public var quality: LadderQuality? = nil
}

/// Writes a ladder's HLS playlists from what was written (`LadderOutcome`), never from encoder
/// settings: per-variant BANDWIDTH = the peak segment bit rate of the rung plus the audio's, and
/// AVERAGE-BANDWIDTH the same with the means (RFC 8216 §4.3.4.2), from the bytes and durations of
/// the segments on disk; CODECS from the streams' own parameter sets; one EXT-X-TARGETDURATION for
/// every playlist (the largest EXTINF rounded half up, RFC 8216bis); audio as one EXT-X-MEDIA group
/// every variant shares. Variants in the order of the outcome's tracks: `listingOrder` puts SDR ones
/// before HDR ones.
enum LadderPlaylists {
    static let master = "master.m3u8"
    static let media = "index.m3u8"
    static let audioGroup = "aac"

    /// `outcome` with its video tracks in the order the manifests list them: the SDR rungs first, then
    /// the HDR ones, each set largest first as written (the audio as it is). A player starts with the
    /// first variant it can play (the first listed is the start variant: Apple's authoring spec,
    /// STREAMING-NOTES §1), and one that decodes HEVC Main 10 without looking at VIDEO-RANGE or at its display (a
    /// browser on an SDR screen) would otherwise start on HLG or PQ pictures it cannot show; a player
    /// that does look (AVPlayer with an HDR display) picks the HDR variants wherever they are listed.
    /// Apple's HEVC and H.264 example stream (`bipbop_adv_example_hevc`) also lists an H.264 variant
    /// first. The MPD's AdaptationSets follow the same order.
    static func listingOrder(_ outcome: LadderOutcome) -> LadderOutcome {
        var ordered = outcome
        let sdr = outcome.video.filter { ($0.videoRange ?? "SDR") == "SDR" }
        ordered.video = sdr + outcome.video.filter { ($0.videoRange ?? "SDR") != "SDR" }
        return ordered
    }

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
    static func make(
        _ outcome: LadderOutcome, language: String?, dropped: [String], manifests: [Ladder.Manifest] = [.hls]
    ) -> (
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
            // On every variant, SDR ones too: Apple requires it whenever a variant is not SDR, and a
            // player told nothing cannot tell an SDR rung from an untagged HDR one.
            attributes.append("VIDEO-RANGE=\(track.videoRange ?? "SDR")")
            if audio != nil { attributes.append("AUDIO=\"\(audioGroup)\"") }
            attributes.append("CLOSED-CAPTIONS=NONE")
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(rendition.playlist)
        }
        files.insert((master, lines.joined(separator: "\n") + "\n"), at: 0)
        if !manifests.contains(.hls) { files = [] }
        if manifests.contains(.dash) {
            files.append((mpdName, mpd(outcome, renditions: renditions, audio: audio, language: language)))
        }
        var written = files.map(\.0)
        for track in all {
            written.append(track.folder + "/" + track.files.initFile)
            written += track.files.segments.map { track.folder + "/" + $0.file }
        }
        let result = LadderResult(
            master: manifests.contains(.hls) ? master : nil, dash: manifests.contains(.dash) ? mpdName : nil,
            video: renditions, audio: audio, dropped: dropped, files: written.sorted())
        return (files, result)
    }

    static let mpdName = "manifest.mpd"

    /// `PT…S` with millisecond precision.
    static func isoDuration(_ seconds: Double) -> String { String(format: "PT%.3fS", seconds) }

    /// A frame rate as DASH writes it (`30`, `30000/1001`; no decimals).
    static func dashFrameRate(_ rate: Double) -> String {
        if abs(rate - rate.rounded()) < 0.001 { return String(Int(rate.rounded())) }
        let ntsc = rate * 1.001
        if abs(ntsc - ntsc.rounded()) < 0.01 { return "\(Int(ntsc.rounded()) * 1000)/1001" }
        return "\(Int((rate * 1000).rounded()))/1000"
    }

    /// A static DASH manifest over the same init and media segments: one AdaptationSet per set of
    /// video rungs (one codec and one dynamic range: the H.264 SDR rungs beside HEVC HDR ones are a
    /// set of their own, as DASH switches only within a set) with its colour properties
    /// (`colourProperties`), and one for the audio; each Representation a `SegmentTemplate`
    /// (`$Number%05d$`, from 0) with a `SegmentTimeline` of the segments' real starts and durations
    /// (timescale 90 kHz), and `bandwidth` the same measured peak as HLS's BANDWIDTH.
    static func mpd(
        _ outcome: LadderOutcome, renditions: [LadderResult.Rendition], audio: LadderResult.Rendition?,
        language: String?
    ) -> String {
        let scale = 90_000.0
        let all = outcome.video + (outcome.audio.map { [$0] } ?? [])
        let total = outcome.video.map { $0.files.segments.reduce(0) { $0 + $1.durationSeconds } }.max() ?? 0
        let longest = all.flatMap(\.files.segments).map(\.durationSeconds).max() ?? 0
        func template(_ track: LadderTrack) -> [String] {
            var lines = [
                "    <SegmentTemplate timescale=\"90000\" startNumber=\"0\" initialization=\"\(track.folder)/\(track.files.initFile)\" media=\"\(track.folder)/seg_$Number%05d$.m4s\">",
                "     <SegmentTimeline>",
            ]
            for segment in track.files.segments {
                let start = Int64((max(0, segment.startSeconds) * scale).rounded())
                let duration = Int64((segment.durationSeconds * scale).rounded())
                lines.append("      <S t=\"\(start)\" d=\"\(duration)\"/>")
            }
            lines += ["     </SegmentTimeline>", "    </SegmentTemplate>"]
            return lines
        }
        var lines = [
            "<?xml version=\"1.0\" encoding=\"utf-8\"?>",
            "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" type=\"static\" profiles=\"urn:mpeg:dash:profile:isoff-live:2011,urn:mpeg:dash:profile:cmaf:2019\" mediaPresentationDuration=\"\(isoDuration(total))\" minBufferTime=\"PT2S\" maxSegmentDuration=\"\(isoDuration(longest))\">",
            " <Period id=\"0\" start=\"PT0S\">",
        ]
        // Consecutive rungs of one codec and range make a set (the tracks come set by set:
        // `listingOrder`), so the Representations stay in the tracks' order.
        var sets: [[(track: LadderTrack, rendition: LadderResult.Rendition)]] = []
        func setKey(_ track: LadderTrack) -> String {
            String(track.codecs.prefix { $0 != "." }) + " " + (track.videoRange ?? "SDR")
        }
        for (track, rendition) in zip(outcome.video, renditions) {
            if let last = sets.last?.last, setKey(last.track) == setKey(track) {
                sets[sets.count - 1].append((track, rendition))
            } else {
                sets.append([(track, rendition)])
            }
        }
        for (id, set) in sets.enumerated() {
            let widest = set.compactMap { $0.track.width }.max() ?? 0
            let tallest = set.compactMap { $0.track.height }.max() ?? 0
            lines.append(
                "  <AdaptationSet id=\"\(id)\" contentType=\"video\" mimeType=\"video/mp4\" segmentAlignment=\"true\" startWithSAP=\"1\" maxWidth=\"\(widest)\" maxHeight=\"\(tallest)\">"
            )
            if let first = set.first { lines += colourProperties(first.track) }
            for (track, rendition) in set {
                var attributes =
                    "id=\"\(track.folder)\" codecs=\"\(track.codecs)\" bandwidth=\"\(rendition.peakBitrate)\""
                if let width = track.width, let height = track.height {
                    attributes += " width=\"\(width)\" height=\"\(height)\" sar=\"1:1\""
                }
                if let rate = track.frameRate { attributes += " frameRate=\"\(dashFrameRate(rate))\"" }
                lines.append("   <Representation \(attributes)>")
                lines += template(track)
                lines.append("   </Representation>")
            }
            lines.append("  </AdaptationSet>")
        }
        if let track = outcome.audio, let audio {
            lines.append(
                "  <AdaptationSet id=\"\(sets.count)\" contentType=\"audio\" mimeType=\"audio/mp4\" lang=\"\(language ?? "und")\" segmentAlignment=\"true\" startWithSAP=\"1\">"
            )
            lines.append(
                "   <Representation id=\"\(track.folder)\" codecs=\"\(track.codecs)\" bandwidth=\"\(audio.peakBitrate)\" audioSamplingRate=\"\(track.sampleRate ?? 48000)\">"
            )
            lines.append(
                "    <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(track.channels ?? 2)\"/>"
            )
            lines += template(track)
            lines += ["   </Representation>", "  </AdaptationSet>"]
        }
        lines += [" </Period>", "</MPD>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// A set of rungs' colours (each rung of a set has the same) as DASH-IF IOP signals them on the
    /// AdaptationSet, in ISO/IEC 23091-2 code points. HDR: the transfer (16 PQ, 18 HLG) as an
    /// EssentialProperty, so a player that cannot show it skips the set, and the primaries and matrix
    /// (9: BT.2020) as SupplementalProperty. SDR: all three as SupplementalProperty (1: BT.709), which
    /// a player may ignore, so the set every device plays is never skipped for them; none when one of
    /// them is unspecified (an untagged source's colours, kept by HEVC rungs).
    static func colourProperties(_ track: LadderTrack) -> [String] {
        guard let colour = track.colour else { return [] }
        let scheme = "urn:mpeg:mpegB:cicp:"
        let hdr = (track.videoRange ?? "SDR") != "SDR"
        if !hdr && [colour.primaries, colour.transfer, colour.matrix].contains(where: { $0 == 2 || $0 <= 0 }) {
            return []
        }
        return [
            "   <\(hdr ? "Essential" : "Supplemental")Property schemeIdUri=\"\(scheme)TransferCharacteristics\" value=\"\(colour.transfer)\"/>",
            "   <SupplementalProperty schemeIdUri=\"\(scheme)ColourPrimaries\" value=\"\(colour.primaries)\"/>",
            "   <SupplementalProperty schemeIdUri=\"\(scheme)MatrixCoefficients\" value=\"\(colour.matrix)\"/>",
        ]
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
