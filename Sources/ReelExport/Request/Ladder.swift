import Foundation
internal import ReelMedia

/// An adaptive-streaming ladder as asked for (`--type hls --ladder 1920x1080,1280x720
/// --segment-duration 6`): the rung sizes and the segment length. Each rung is a box the picture is
/// fitted into, aspect ratio kept; a rung larger than the source is dropped, never upscaled
/// (`rungs(forSourceWidth:height:)`).
public struct Ladder: Sendable, Equatable, Codable {
    /// One rung's box, in pixels.
    public struct Size: Sendable, Equatable, Codable, CustomStringConvertible {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
        public var description: String { "\(width)x\(height)" }
    }

    /// The boxes, largest first (as given, sorted by area).
    public var sizes: [Size]
    /// Seconds per segment (default 6, as Apple's authoring spec).
    public var segmentSeconds: Double
    /// The manifests written over the one set of segments.
    public var manifests: [Manifest] = [.hls]
    /// The ladder preset this came from (`HLSLadder1080`), if any.
    public var presetName: String? = nil
    /// Per box (same order as `sizes`): the video preset whose encoder settings that rung uses (CRF,
    /// x264 preset, profile, bit-rate cap), when a ladder preset named one; nil: the session's preset.
    public var rungPresets: [Preset]? = nil
    /// Whether a ladder that keeps HDR (HEVC rungs of a 10-bit HLG or PQ source) also writes SDR rungs
    /// beside its HDR ones, as Apple's HLS authoring rules ask ("for backward compatibility SDR
    /// streams MUST be provided"): H.264 in the same boxes, tone-mapped as the H.264 presets are, from
    /// the same decode, in folders `s0`, `s1`, …. Nil or true: yes (`--no-sdr-rungs`, or a ladder
    /// preset's `"sdrRungs": false`, says no). Other ladders (H.264, or an SDR source) are SDR already
    /// and write none.
    public var sdrRungs: Bool? = nil
    /// Per box (same order as `sizes`): the H.264 video preset whose encoder settings that box's SDR
    /// rung uses, as the H.264 ladder of the same boxes would (a ladder preset's rung `HEVC1280x720`:
    /// `1280x720`, the H.264 preset with its box; rungs given as sizes: `defaultPreset`). Nil: the
    /// shipped `defaultPreset`'s settings for every box.
    public var sdrRungPresets: [Preset]? = nil

    /// The extension of the ladder's folder: `hls` when it has HLS playlists, `dash` for an MPD alone.
    public var folderExtension: String { manifests.contains(.hls) ? Manifest.hls.rawValue : Manifest.dash.rawValue }

    /// Whether SDR rungs go beside HDR ones (`sdrRungs`; nil is yes).
    public var writesSDRRungs: Bool { sdrRungs ?? true }

    /// A manifest format.
    public enum Manifest: String, Sendable, Equatable, Codable, CaseIterable {
        /// `master.m3u8` and one `index.m3u8` per rendition.
        case hls
        /// `manifest.mpd` (DASH, static, `SegmentTemplate` with a `SegmentTimeline`).
        case dash
    }

    /// Default segment length.
    public static let defaultSegmentSeconds = 6.0
    /// The preset a ladder's rungs take their encoder settings from when none is named: H.264 high
    /// profile, CRF 21, x264 `medium`, AAC 192 kbit/s.
    public static let defaultPreset = "1920x1080"
    /// The most rungs one ladder may have.
    public static let maxRungs = 8

    public init(sizes: [Size], segmentSeconds: Double = Ladder.defaultSegmentSeconds) {
        self.sizes = sizes.sorted { $0.width * $0.height > $1.width * $1.height }
        self.segmentSeconds = segmentSeconds
    }

    /// The ladder a ladder preset describes: one rung per video preset it names, each that preset's
    /// box (long side as width) and encoder settings; `segmentDuration` and `manifests`, when given
    /// (the command line's), replace the preset's. Throws `invalid-argument` as `parse` does.
    public static func from(
        preset: Preset, library: PresetLibrary, segmentDuration: String?, manifests: String?
    ) throws(ExportError) -> Ladder {
        guard let spec = preset.ladder else {
            throw ExportError(.invalidArgument, "preset \(preset.name) is not a ladder preset")
        }
        var rungs: [(Size, Preset)] = []
        for name in spec.rungs {
            let rung = try library.preset(named: name)
            guard let box = rung.video?.box else {
                throw ExportError(.invalidPreset, "ladder preset \(preset.name) names \(name), which has no box")
            }
            rungs.append((Size(width: box[0], height: box[1]), rung))
        }
        rungs.sort { $0.0.width * $0.0.height > $1.0.width * $1.0.height }
        var ladder = try parse(
            rungs.map(\.0.description).joined(separator: ","),
            segmentDuration: segmentDuration ?? spec.segmentDuration.map { String($0) },
            manifests: manifests ?? spec.manifests?.joined(separator: ","))
        ladder.sizes = rungs.map(\.0)
        ladder.rungPresets = rungs.map(\.1)
        ladder.presetName = preset.name
        ladder.sdrRungs = spec.sdrRungs
        if rungs.contains(where: { $0.1.video?.codec == .hevc }) {
            let fallback = try? library.preset(named: defaultPreset)
            ladder.sdrRungPresets = try rungs.map { rung throws(ExportError) -> Preset in
                if let twin = sdrPreset(for: rung.0, in: library) { return twin }
                return try sdrFallback(fallback)
            }
        }
        return ladder
    }

    /// The H.264 video preset of `library` whose box is `box` (either way round), if any: what an SDR
    /// rung in that box takes its encoder settings from.
    static func sdrPreset(for box: Size, in library: PresetLibrary) -> Preset? {
        library.presets.first { preset in
            guard preset.kind == .video, let video = preset.video, video.codec == .h264, let given = video.box else {
                return false
            }
            return given.sorted() == [box.width, box.height].sorted()
        }
    }

    /// The preset box `box`'s SDR rung takes its settings from (`sdrRungPresets`).
    func sdrRungPreset(box: Int) throws(ExportError) -> Preset {
        if let presets = sdrRungPresets, presets.indices.contains(box) { return presets[box] }
        return try Ladder.sdrFallback(nil)
    }

    /// `defaultPreset` as `library` has it, when it is an H.264 video preset (a preset folder may
    /// replace it); else the shipped one.
    static func sdrFallback(_ preset: Preset?) throws(ExportError) -> Preset {
        if let preset, preset.kind == .video, preset.video?.codec == .h264 { return preset }
        return try PresetLibrary.shipped.preset(named: defaultPreset)
    }

    /// Whether `text` (a `--ladder` value) names a ladder preset rather than listing sizes: it is one
    /// word that is not `WxH`.
    public static func namesPreset(_ text: String) -> Bool {
        let item = text.trimmingCharacters(in: .whitespaces).lowercased()
        guard !item.isEmpty, !item.contains(",") else { return false }
        let numbers = item.split(separator: "x", omittingEmptySubsequences: false)
        return !(numbers.count == 2 && numbers.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) })
            && !item.first!.isNumber
    }

    /// Reads `1920x1080,1280x720,…` and a segment length (`6`, `6s`, `4.5`). Throws `invalid-argument`
    /// naming the first thing that cannot be read, in one line.
    public static func parse(_ text: String, segmentDuration: String?, manifests: String? = nil) throws(ExportError)
        -> Ladder
    {
        var formats: [Manifest] = [.hls]
        if let manifests {
            formats = []
            for name in manifests.split(separator: ",", omittingEmptySubsequences: false) {
                let word = name.trimmingCharacters(in: .whitespaces).lowercased()
                guard let format = Manifest(rawValue: word) else {
                    throw ExportError(.invalidArgument, "unknown manifest '\(word)'; use hls, dash or hls,dash")
                }
                if !formats.contains(format) { formats.append(format) }
            }
        }
        var sizes: [Size] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingCharacters(in: .whitespaces)
            let numbers = item.lowercased().split(separator: "x", omittingEmptySubsequences: false)
            guard numbers.count == 2, let width = Int(numbers[0]), let height = Int(numbers[1]) else {
                throw ExportError(
                    .invalidArgument, "cannot read the ladder rung '\(item)'; write WxH sizes, e.g. 1920x1080,1280x720")
            }
            guard (16...8192).contains(width), (16...8192).contains(height) else {
                throw ExportError(
                    .invalidArgument, "the ladder rung \(item) is out of range (16 to 8192 pixels a side)")
            }
            let size = Size(width: width, height: height)
            if sizes.contains(size) { throw ExportError(.invalidArgument, "the ladder names \(item) twice") }
            sizes.append(size)
        }
        if sizes.count > maxRungs {
            throw ExportError(.invalidArgument, "a ladder has at most \(maxRungs) rungs, not \(sizes.count)")
        }
        var seconds = defaultSegmentSeconds
        if let segmentDuration {
            let trimmed = segmentDuration.trimmingCharacters(in: .whitespaces).lowercased()
            let number = trimmed.hasSuffix("s") ? String(trimmed.dropLast()) : trimmed
            guard let value = Double(number), value.isFinite, (1...60).contains(value) else {
                throw ExportError(
                    .invalidArgument,
                    "cannot use the segment duration '\(segmentDuration)'; give seconds from 1 to 60, e.g. 6 or 4.5s")
            }
            seconds = value
        }
        var ladder = Ladder(sizes: sizes, segmentSeconds: seconds)
        ladder.manifests = formats
        return ladder
    }

    /// The rungs for an upright source of `width`x`height`: each box turned to the source's
    /// orientation (`box(_:forSourceWidth:height:)`), the picture fitted into it (both sides even),
    /// largest first; a rung whose fitted size is larger than the source's is dropped (`dropped`,
    /// the boxes as given), as is one the same size as a larger rung's. A portrait 1080x1920 source
    /// under 1920x1080,1280x720 makes 1080x1920 and 720x1280, not 608x1080 and 406x720.
    public func rungs(forSourceWidth width: Int, height: Int) -> (kept: [Size], dropped: [Size]) {
        let (kept, dropped) = fitted(forSourceWidth: width, height: height)
        return (kept.map(\.size), dropped)
    }

    /// `rungs(forSourceWidth:height:)` with each kept rung's box index in `sizes`.
    func fitted(forSourceWidth width: Int, height: Int) -> (kept: [(box: Int, size: Size)], dropped: [Size]) {
        var kept: [(box: Int, size: Size)] = []
        var dropped: [Size] = []
        for (index, given) in sizes.enumerated() {
            let box = Ladder.box(given, forSourceWidth: width, height: height)
            let scale = min(Double(box.width) / Double(width), Double(box.height) / Double(height))
            let fitted = Size(
                width: max(2, Int((Double(width) * scale / 2).rounded()) * 2),
                height: max(2, Int((Double(height) * scale / 2).rounded()) * 2))
            // A box that fits the whole source at more than its size would be upscaling.
            if scale > 1.0001 || kept.contains(where: { $0.size == fitted }) {
                dropped.append(given)
            } else {
                kept.append((index, fitted))
            }
        }
        return (kept, dropped)
    }

    /// A rung's box in the upright source's orientation: its long side along the source's long side
    /// (a square source counts as landscape), as `Preset.outputSize` turns a video preset's box and
    /// AVFoundation's size presets fit a portrait video into 1080x1920 under
    /// `AVAssetExportPreset1920x1080`. So `1920x1080` and `1080x1920` name the same rung.
    static func box(_ box: Size, forSourceWidth width: Int, height: Int) -> Size {
        let long = max(box.width, box.height)
        let short = min(box.width, box.height)
        return width >= height ? Size(width: long, height: short) : Size(width: short, height: long)
    }

    /// A rung's VBV cap in bits per second, so the CRF encode cannot spike past what the rung's
    /// viewers can fetch.
    ///
    /// H.264: about 3.5 bits a second per pixel (1920x1080 ≈ 7.3 Mbit/s, 1280x720 ≈ 3.2, 960x540 ≈
    /// 1.8, 640x360 ≈ 0.8: Apple's H.264 ladder's upper rates).
    ///
    /// HEVC: the same per pixel times the ratio of Apple's HEVC rates to its H.264 rates at the same
    /// size and frame rate (HLS Authoring Specification, the video ladder table; STREAMING-NOTES §3).
    /// SDR (HEVC Main, or Main 10 without an HDR transfer): 3/4, as the table's 1080p and 720p rows
    /// give (4500/6000 and 5800/7800 ≈ 0.75, 2400/3000 and 3400/4500 ≈ 0.76-0.8): 1920x1080 ≈ 5.4
    /// Mbit/s, 1280x720 ≈ 2.4, 960x540 ≈ 1.4, 640x360 ≈ 0.6. HDR kept (Main 10, HLG or PQ): 9/10, the
    /// table's HEVC HDR column being 1.2 times its HEVC SDR column at every size (5400/4500,
    /// 7000/5800, 4080/3400, 1930/1600): 1920x1080 ≈ 6.5 Mbit/s, 1280x720 ≈ 2.9. (The table's 360p
    /// and 432p rows are lower still, 145/365 and 300/1100; the one ratio keeps the caps one rule.)
    /// AV1 (Apple's table has no column for it): 0.6 of H.264's SDR, 0.75 HDR, the share the
    /// AV1 presets' own measured bytes give at H.264's SSIM (0.64 on the bench's clips). SVT-AV1
    /// holds a cap as capped CRF, without a VBV buffer: a segment may go over it, and BANDWIDTH
    /// says what was written.
    static func maxBitrate(for size: Size, codec: VideoEncoding.Codec = .h264, hdr: Bool = false) -> Int {
        let h264 = Double(size.width * size.height) * 3.5
        let share: Double
        switch codec {
        case .h264: share = 1
        case .hevc: share = hdr ? 0.9 : 0.75
        case .av1: share = hdr ? 0.75 : 0.6
        }
        return max(100_000, Int(h264 * share))
    }
}
