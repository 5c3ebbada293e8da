import Foundation
// ReelExport's API shows a few ReelMedia types on purpose: these three under its own names, and
// TranscodePlan, TranscodeProgress.Phase, VideoEncoding.Codec and the colour facts of a plan
// (DynamicRange, ToneMapping, HDRStaticMetadata) inside its own types. The files that
// do import ReelMedia `public`; the others import it `internal`, so the compiler keeps it that way.
public import ReelMedia
import ReelSystem

/// A stream of an asset (codec, sizes, rotation, frame rate, colour, audio layout).
public typealias AssetTrack = StreamInfo
/// What kind of data a track carries.
public typealias TrackKind = StreamKind
/// Limits and demuxer allowlist that inputs are opened under.
public typealias InputLimits = InputPolicy

/// A probed media file: the facts an export decides on, like `AVAsset`/`PHAsset`.
public struct Asset: Sendable {
    /// The file, as given.
    public let url: URL
    /// When the asset is part of `url` (a Motion Photo's embedded video): the bytes it occupies,
    /// read in place (never copied out); nil for the whole file.
    public let byteRange: Range<Int64>?
    /// Container: FFmpeg's demuxer name (`mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`).
    public let container: String
    /// Seconds.
    public let duration: Double
    /// File size in bytes (the range's length for a byte range).
    public let fileBytes: Int64
    /// Overall bit rate, bits per second.
    public let bitRate: Int?
    /// Every track in the file.
    public let tracks: [AssetTrack]
    /// The video track an export uses (not a cover picture), if any.
    public let videoTrack: AssetTrack?
    /// Why `videoTrack` was chosen, when the file has more than one video track.
    public let videoTrackChoice: String?
    /// The audio track an export uses: the default one, if any.
    public let audioTrack: AssetTrack?
    /// Container metadata as read.
    public let metadata: [String: String]

    /// Probes the file at `url` (synchronously; see `load(_:byteRange:limits:)` for async callers).
    /// Throws `ExportError` (`unreadable-input`, `limit-exceeded`).
    /// With `byteRange`, the asset is those bytes of the file (a Motion Photo's embedded MP4), read in
    /// place: the file obeys `limits` as any input does, and the range must lie inside it.
    public init(url: URL, byteRange: Range<Int64>? = nil, limits: InputLimits = .standard) throws(ExportError) {
        let info: MediaInfo
        do {
            if let byteRange {
                info = try MediaProbe.probe(
                    path: url.path, byteRange: byteRange, policy: limits, decodingFirstFrames: true)
            } else {
                info = try MediaProbe.probe(path: url.path, policy: limits)
            }
        } catch {
            throw ExportError(error)
        }
        self.init(url: url, info: info, byteRange: byteRange)
    }

    private init(url: URL, info: MediaInfo, byteRange: Range<Int64>? = nil) {
        self.url = url
        self.byteRange = byteRange
        container = info.formatName
        duration = info.durationSeconds
        fileBytes = info.fileBytes
        bitRate = info.bitRate
        tracks = info.streams
        videoTrack = info.bestVideoStream
        videoTrackChoice = info.videoStreamChoice
        audioTrack = info.streams.first { $0.kind == .audio && $0.isDefault } ?? info.bestAudioStream
        metadata = info.metadata
    }

    /// Probes off the caller's thread, so async code never blocks the cooperative pool on file I/O.
    public static func load(_ url: URL, byteRange: Range<Int64>? = nil, limits: InputLimits = .standard)
        async throws(ExportError) -> Asset
    {
        try await onOwnThread(named: "reel-probe") { () throws(ExportError) in
            try Asset(url: url, byteRange: byteRange, limits: limits)
        }
    }

    /// Size as a viewer sees it: sample aspect ratio and rotation applied.
    public var displaySize: (width: Int, height: Int)? { videoTrack?.displaySize }

    /// Clockwise rotation a player applies to the video (0, 90, 180, 270).
    public var rotation: Int { videoTrack?.rotation ?? 0 }

    /// Frames per second of the video track.
    public var frameRate: Double? { videoTrack?.frameRate?.value }

    /// When the recording was made (`creation_time` or QuickTime's `creationdate`).
    public var creationDate: Date? {
        for key in ["com.apple.quicktime.creationdate", "creation_time", "date"] {
            if let text = metadata[key], let date = Asset.parseDate(text) { return date }
        }
        return nil
    }

    /// Where it was recorded, as an ISO 6709 string (`+48.8584+002.2945/`).
    public var location: String? {
        metadata["com.apple.quicktime.location.ISO6709"] ?? metadata["location"] ?? metadata["location-eng"]
    }

    /// Device make and model (QuickTime keys, or Android's).
    public var make: String? {
        metadata["com.apple.quicktime.make"] ?? metadata["make"] ?? metadata["com.android.manufacturer"]
    }
    /// Device model (QuickTime keys, or Android's).
    public var model: String? {
        metadata["com.apple.quicktime.model"] ?? metadata["model"] ?? metadata["com.android.model"]
    }

    /// The QuickTime content identifier that pairs a Live Photo's still and movie.
    public var contentIdentifier: String? { metadata["com.apple.quicktime.content.identifier"] }

    static func parseDate(_ text: String) -> Date? {
        let full = ISO8601DateFormatter()
        full.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = full.date(from: text) { return date }
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        // QuickTime writes "2024-05-01T12:00:00+0200".
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for format in ["yyyy-MM-dd'T'HH:mm:ssZ", "yyyy-MM-dd HH:mm:ss"] {
            formatter.dateFormat = format
            formatter.timeZone = TimeZone(identifier: "UTC")
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}

extension Asset {
    /// Probes only what the file's header declares, under the same limits as a full probe: cheap
    /// enough to check every job at submit time.
    ///
    /// MP4/QuickTime and Matroska headers describe their streams, so no frame is decoded (the moov
    /// or the segment header is read; pixel formats and some codec details may stay unknown). Other
    /// containers get FFmpeg's ordinary probe, which is bounded: it reads at most 5 MB and 5 s of
    /// the file. Throws `unreadable-input` or `limit-exceeded`, as `init(url:byteRange:limits:)` does.
    ///
    /// `demuxer` (an FFmpeg demuxer name the limits allow, such as `mov`) skips FFmpeg's format probe
    /// for a caller that recognised the format from the first bytes (the library's scan); it applies
    /// to the header-only probe of a whole file.
    public static func header(
        of url: URL, byteRange: Range<Int64>? = nil, limits: InputLimits = Asset.defaultLimits,
        demuxer: String? = nil
    ) throws(ExportError) -> Asset {
        if let byteRange {
            // The range probe reads the header alone when it describes the streams, and checks the limits.
            do {
                let info = try MediaProbe.probe(path: url.path, byteRange: byteRange, policy: limits)
                return Asset(url: url, info: info, byteRange: byteRange)
            } catch {
                throw ExportError(error)
            }
        }
        let standard = InputLimits.standard
        // The header-only probe opens files under the standard demuxer list and stream limit; a
        // policy that admits more gets the full probe rather than a false refusal.
        guard limits.allowedDemuxers == standard.allowedDemuxers, limits.maxStreams <= standard.maxStreams else {
            return try Asset(url: url, limits: limits)
        }
        let info: MediaInfo
        do {
            try MediaProbe.checkAccess(path: url.path, policy: limits)
            info = try MediaProbe.probeHeader(path: url.path, demuxer: demuxer)
        } catch {
            throw ExportError(error)
        }
        // The limits a full probe checks (ReelMedia's InputFile.checkLimits), with its words.
        if info.streams.count > limits.maxStreams {
            throw ExportError(
                .limitExceeded, "the input has \(info.streams.count) streams, over the limit of \(limits.maxStreams)")
        }
        if info.durationSeconds > limits.maxDurationSeconds {
            throw ExportError(
                .limitExceeded,
                "the input lasts \(Int(info.durationSeconds)) s, over the limit of \(Int(limits.maxDurationSeconds)) s")
        }
        for stream in info.streams where stream.kind == .video {
            if let width = stream.width, let height = stream.height, max(width, height) > limits.maxDimension {
                throw ExportError(
                    .limitExceeded,
                    "stream \(stream.index) is \(width)x\(height), over the limit of \(limits.maxDimension) pixels")
            }
        }
        return Asset(url: url, info: info)
    }

    /// The input limits and demuxer allowlist Reel uses unless told otherwise.
    public static let defaultLimits: InputLimits = .standard

    /// Checks that `url` names a readable regular file the limits allow (allowed roots, size),
    /// without probing it. Throws `unreadable-input` or `limit-exceeded`.
    public static func checkAccess(_ url: URL, limits: InputLimits = Asset.defaultLimits) throws(ExportError) {
        do {
            try MediaProbe.checkAccess(path: url.path, policy: limits)
        } catch {
            throw ExportError(error)
        }
    }
}
