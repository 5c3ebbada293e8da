import Foundation
internal import ReelMedia

/// The read-back of a ladder's folder before it is published: the playlists and the manifest are read
/// from disk as a player would, every file they name is checked against what was written, and every
/// rendition (init + segments, as a player appends them) is read by libavformat, packets only
/// (`LadderReadBack`), and each video's CODECS is recomputed from its init segment. Any difference
/// fails the export with one line naming the file; nothing is published then.
extension LadderVerification {
    /// Seconds a segment's read-back start or duration may differ from what the playlists say:
    /// EXTINF is written in microseconds, track time bases are at least 1/90000 s.
    static let timeTolerance = 0.001

    /// One media playlist as read back.
    struct MediaPlaylist {
        var target: Int
        var map: String
        var segments: [(uri: String, seconds: Double)]
    }

    /// Reads back the folder (see the type); returns its total bytes.
    static func verify(folder: URL, outcome: LadderOutcome, result: LadderResult) throws(ExportError) -> Int64 {
        func fail(_ message: String) -> ExportError { ExportError(.outputInvalid, "ladder verification: " + message) }
        let tracks = outcome.video + (outcome.audio.map { [$0] } ?? [])
        let renditions = result.video + (result.audio.map { [$0] } ?? [])
        // Every file the result lists is there, with the bytes written for it.
        var expected: [String: Int64] = [:]
        for track in tracks {
            expected[track.folder + "/" + track.files.initFile] = track.files.initBytes
            for segment in track.files.segments { expected[track.folder + "/" + segment.file] = segment.bytes }
            if track.files.segments.isEmpty { throw fail("the rendition \(track.folder) has no segment") }
        }
        var sizes: [String: Int64] = [:]
        for file in result.files {
            var status = stat()
            guard stat(folder.path + "/" + file, &status) == 0 else { throw fail("\(file) is missing") }
            let size = Int64(status.st_size)
            if let want = expected[file], want != size { throw fail("\(file) has \(size) bytes, \(want) were written") }
            sizes[file] = size
        }

        // The segment timeline each rendition's manifests give: the media playlists, else the MPD.
        var timelines: [[(uri: String, seconds: Double)]] = []
        if let master = result.master {
            let text = try read(folder, master)
            let (variants, audioURI) = try parseMaster(text, fail: fail)
            guard variants.map(\.uri) == result.video.map(\.playlist), audioURI == result.audio?.playlist else {
                throw fail("\(master) does not list the renditions written")
            }
            var playlists: [MediaPlaylist] = []
            for (rendition, track) in zip(renditions, tracks) {
                let playlist = try parseMedia(
                    try read(folder, rendition.playlist), name: rendition.playlist, fail: fail)
                let base = (rendition.playlist as NSString).deletingLastPathComponent
                guard base == track.folder, playlist.map == track.files.initFile,
                    playlist.segments.map(\.uri) == track.files.segments.map(\.file)
                else { throw fail("\(rendition.playlist) does not name the segments written") }
                playlists.append(playlist)
                timelines.append(playlist.segments)
            }
            if Set(playlists.map(\.target)).count != 1 {
                throw fail("the playlists' EXT-X-TARGETDURATION differ: \(playlists.map(\.target))")
            }
            for playlist in playlists {
                if let over = playlist.segments.first(where: {
                    Int(($0.seconds + 0.5).rounded(.down)) > playlist.target
                }) {
                    throw fail("\(over.uri) lasts \(over.seconds) s, over EXT-X-TARGETDURATION \(playlist.target)")
                }
            }
            // BANDWIDTH and AVERAGE-BANDWIDTH are what the files on disk and their EXTINF imply.
            func rates(_ index: Int) -> (peak: Double, average: Double) {
                let track = tracks[index]
                var peak = 0.0
                var bits = 0.0
                var seconds = 0.0
                for (segment, entry) in zip(track.files.segments, timelines[index]) where entry.seconds > 0 {
                    let bytes = Double(sizes[track.folder + "/" + segment.file] ?? 0)
                    peak = max(peak, bytes * 8 / entry.seconds)
                    bits += bytes * 8
                    seconds += entry.seconds
                }
                return (peak, seconds > 0 ? bits / seconds : 0)
            }
            let audioRates: (peak: Double, average: Double) =
                outcome.audio != nil ? rates(tracks.count - 1) : (0, 0)
            for (index, variant) in variants.enumerated() {
                let video = rates(index)
                let pairs: [(String, Double)] = [
                    ("BANDWIDTH", video.peak + audioRates.peak),
                    ("AVERAGE-BANDWIDTH", video.average + audioRates.average),
                ]
                for (key, measured) in pairs {
                    guard let declared = variant.attributes[key].flatMap(Double.init) else {
                        throw fail("\(master): \(variant.uri) has no \(key)")
                    }
                    // Rounded up to whole bits per second from microsecond EXTINF: 0.01 % covers both.
                    if abs(declared - measured) > max(2.0, measured * 1e-4) {
                        throw fail(
                            "\(master): \(variant.uri) declares \(key)=\(Int(declared)), its files make \(Int(measured.rounded(.up)))"
                        )
                    }
                }
                // CODECS: the video's recomputed from its init segment's sample entry (`avcC` or
                // `hvcC`, as libavformat reads it back), never taken from the encoder.
                let initPath = folder.path + "/" + tracks[index].folder + "/" + tracks[index].files.initFile
                let written: String
                do {
                    written = try CodecString.ofInitSegment(at: initPath)
                } catch {
                    throw fail(error.message)
                }
                let declared = variant.attributes["CODECS"]?.split(separator: ",").first.map(String.init)
                guard declared == written else {
                    throw fail(
                        "\(master): \(variant.uri) declares CODECS \(declared ?? "none"), its init segment makes \(written)"
                    )
                }
            }
        }
        if let mpd = result.dash {
            let templates = try parseMPD(try read(folder, mpd), name: mpd, fail: fail)
            guard templates.count == tracks.count else { throw fail("\(mpd) has \(templates.count) representations") }
            for (index, (template, track)) in zip(templates, tracks).enumerated() {
                guard template.initialization == track.folder + "/" + track.files.initFile,
                    template.media.count == track.files.segments.count,
                    zip(template.media, track.files.segments).allSatisfy({ $0.uri == track.folder + "/" + $1.file })
                else { throw fail("\(mpd) does not address the segments of \(track.folder) written") }
                let timeline = template.media.map { (uri: ($0.uri as NSString).lastPathComponent, seconds: $0.seconds) }
                if timelines.count > index {
                    for (entry, listed) in zip(timeline, timelines[index])
                    where abs(entry.seconds - listed.seconds) > timeTolerance {
                        throw fail(
                            "\(mpd) gives \(track.folder)/\(entry.uri) \(entry.seconds) s, its playlist \(listed.seconds) s"
                        )
                    }
                } else {
                    timelines.append(timeline)
                }
            }
        }

        // Every rendition read back: samples, keyframes and times as the manifests say.
        var videoStarts: [Double]?
        for (index, track) in tracks.enumerated() {
            let isAudio = outcome.audio != nil && index == tracks.count - 1
            let found: [SegmentReadBack]
            do {
                found = try LadderReadBack.read(
                    folder: folder.path + "/" + track.folder, initFile: track.files.initFile,
                    segments: track.files.segments.map(\.file))
            } catch {
                throw fail(error.message)
            }
            let timeline = timelines[index]
            var starts: [Double] = []
            for (position, (segment, written)) in zip(found, track.files.segments).enumerated() {
                let name = track.folder + "/" + segment.file
                guard segment.packets == written.samples else {
                    throw fail("\(name) holds \(segment.packets) samples, \(written.samples) were written")
                }
                guard let first = segment.firstSeconds, let earliest = segment.earliestSeconds else {
                    throw fail("\(name) has no timestamps")
                }
                if !isAudio {
                    if !segment.startsWithKeyframe { throw fail("\(name) does not start with a keyframe") }
                    if abs(first - written.startSeconds) > timeTolerance {
                        throw fail(
                            String(format: "%@ starts at %.6f s, not at %.6f s", name, first, written.startSeconds))
                    }
                }
                // An audio rendition's priming packets before 0 are trimmed by its edit list.
                starts.append(isAudio && position == 0 ? max(0, earliest) : earliest)
            }
            if !isAudio {
                if let videoStarts,
                    starts.count != videoStarts.count
                        || zip(starts, videoStarts).contains(where: { abs($0 - $1) > 1e-4 })
                {
                    throw fail("the segments of \(track.folder) do not start at the times of \(tracks[0].folder)'s")
                }
                videoStarts = videoStarts ?? starts
                let samples = found.map(\.packets).reduce(0, +)
                if samples != outcome.frames {
                    throw fail("\(track.folder) holds \(samples) frames, \(outcome.frames) were encoded")
                }
            }
            for position in found.indices {
                let name = track.folder + "/" + found[position].file
                let end = position + 1 < starts.count ? starts[position + 1] : found[position].endSeconds ?? 0
                let seconds = end - starts[position]
                let listed = timeline[position].seconds
                // Where the last segment ends is known to a frame only: the file gives its last
                // packet no duration (`SegmentReadBack.endSeconds` adds the shortest step, which a
                // variable-rate source's last frame may outlast, up to two nominal frames here),
                // and the last AAC packet is padded to a whole frame the playlist may leave out.
                var (under, over) = (timeTolerance, timeTolerance)
                if position == found.count - 1 {
                    if isAudio {
                        over += 1024 / Double(track.sampleRate ?? 48_000)
                    } else {
                        under += 2 / max(1, track.frameRate ?? 24)
                    }
                }
                if listed > seconds + under || seconds - listed > over {
                    throw fail(String(format: "%@ plays %.6f s, its manifest says %.6f s", name, seconds, listed))
                }
            }
        }
        return sizes.values.reduce(0, +)
    }

    private static func read(_ folder: URL, _ file: String) throws(ExportError) -> String {
        guard let data = FileManager.default.contents(atPath: folder.path + "/" + file),
            let text = String(data: data, encoding: .utf8)
        else { throw ExportError(.outputInvalid, "ladder verification: cannot read back \(file)") }
        return text
    }

    /// The attributes of an HLS tag (`KEY=value,KEY="quoted, value"`), quotes removed.
    static func attributes(_ line: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var key = ""
        var value = ""
        var inKey = true
        var quoted = false
        for character in line {
            if inKey {
                if character == "=" { inKey = false } else { key.append(character) }
            } else if character == "\"" {
                quoted.toggle()
            } else if character == "," && !quoted {
                result[key] = value
                (key, value, inKey) = ("", "", true)
            } else {
                value.append(character)
            }
        }
        if !key.isEmpty { result[key] = value }
        return result
    }

    static func parseMaster(_ text: String, fail: (String) -> ExportError) throws(ExportError) -> (
        variants: [(attributes: [String: String], uri: String)], audio: String?
    ) {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U" else { throw fail("the master playlist does not start with #EXTM3U") }
        var variants: [(attributes: [String: String], uri: String)] = []
        var audio: String?
        for (index, line) in lines.enumerated() {
            if line.hasPrefix("#EXT-X-MEDIA:") {
                audio = attributes(line.dropFirst("#EXT-X-MEDIA:".count)[...])["URI"]
            } else if line.hasPrefix("#EXT-X-STREAM-INF:") {
                guard index + 1 < lines.count, !lines[index + 1].hasPrefix("#") else {
                    throw fail("the master playlist has an EXT-X-STREAM-INF without a URI")
                }
                variants.append((attributes(line.dropFirst("#EXT-X-STREAM-INF:".count)[...]), lines[index + 1]))
            }
        }
        return (variants, audio)
    }

    static func parseMedia(_ text: String, name: String, fail: (String) -> ExportError) throws(ExportError)
        -> MediaPlaylist
    {
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U", lines.last == "#EXT-X-ENDLIST" else {
            throw fail("\(name) is not a complete playlist (#EXTM3U … #EXT-X-ENDLIST)")
        }
        var target: Int?
        var map: String?
        var segments: [(uri: String, seconds: Double)] = []
        var pending: Double?
        for line in lines {
            if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                target = Int(line.dropFirst("#EXT-X-TARGETDURATION:".count))
            } else if line.hasPrefix("#EXT-X-MAP:") {
                map = attributes(line.dropFirst("#EXT-X-MAP:".count)[...])["URI"]
            } else if line.hasPrefix("#EXTINF:") {
                pending = Double(line.dropFirst("#EXTINF:".count).split(separator: ",").first ?? "")
                if pending == nil { throw fail("\(name) has an unreadable \(line)") }
            } else if !line.hasPrefix("#"), !line.isEmpty {
                guard let seconds = pending else { throw fail("\(name) names \(line) without an EXTINF") }
                segments.append((line, seconds))
                pending = nil
            }
        }
        guard let target, let map else { throw fail("\(name) lacks EXT-X-TARGETDURATION or EXT-X-MAP") }
        return MediaPlaylist(target: target, map: map, segments: segments)
    }

    /// Each Representation's SegmentTemplate, in order: its init and the media segments its
    /// `$Number%05d$` template and SegmentTimeline address, with their durations.
    static func parseMPD(_ text: String, name: String, fail: (String) -> ExportError) throws(ExportError) -> [(
        initialization: String, media: [(uri: String, seconds: Double)]
    )] {
        func attribute(_ key: String, in tag: some StringProtocol) -> String? {
            guard let range = tag.range(of: " \(key)=\"") else { return nil }
            let rest = tag[range.upperBound...]
            return rest.firstIndex(of: "\"").map { String(rest[..<$0]) }
        }
        var templates: [(initialization: String, media: [(uri: String, seconds: Double)])] = []
        var pieces = text.components(separatedBy: "<SegmentTemplate").dropFirst()
        while let piece = pieces.popFirst() {
            let tag = piece.prefix { $0 != ">" }
            guard let initialization = attribute("initialization", in: tag), let media = attribute("media", in: tag),
                let scale = attribute("timescale", in: tag).flatMap(Double.init), scale > 0,
                let startNumber = attribute("startNumber", in: tag).flatMap(Int.init),
                let body = piece.components(separatedBy: "</SegmentTemplate>").first
            else { throw fail("\(name) has a SegmentTemplate it cannot read") }
            var entries: [(uri: String, seconds: Double)] = []
            for entry in body.components(separatedBy: "<S ").dropFirst() {
                let entryTag = entry.prefix { $0 != ">" }
                guard let duration = attribute("d", in: " " + String(entryTag)).flatMap(Double.init) else {
                    throw fail("\(name) has an S element without d")
                }
                let repeats = attribute("r", in: " " + String(entryTag)).flatMap(Int.init) ?? 0
                for _ in 0...max(0, repeats) {
                    let number = String(format: "%05d", startNumber + entries.count)
                    entries.append((media.replacingOccurrences(of: "$Number%05d$", with: number), duration / scale))
                }
            }
            templates.append((initialization, entries))
        }
        return templates
    }
}
