import Foundation
public import ReelMedia
import ReelSystem

/// A still-image file format: JPEG, PNG or WebP (where this FFmpeg has libwebp).
public typealias ImageFormat = ReelMedia.ImageFormat
/// A picture or sprite sheet `AssetImageGenerator.sheets` made, with the time of each cell.
public typealias ThumbnailSheet = ThumbnailImage

/// Still images from an asset's video track, like `AVAssetImageGenerator`: at given times, fitted
/// into a maximum size, upright, SDR (HLG and PQ tone-mapped by the exports' own tone mapper, so a
/// picture matches the exported video), as JPEG, PNG or WebP files' bytes.
///
/// The source is opened and decoded once per call, in time order; it seeks only forward, and only
/// when a keyframe lies between one picture and the next.
///
/// Differences from Apple's: `appliesPreferredTrackTransform` defaults to true; times are seconds;
/// results come in time order (not necessarily the order asked); the pixel aspect ratio is always
/// applied (Apple's default `cleanAperture`).
public struct AssetImageGenerator: Sendable {
    /// A picture's largest size: width and height in pixels, 0 meaning unbounded.
    public struct Size: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
        public static let zero = Size(width: 0, height: 0)
    }

    /// One picture made.
    public struct Image: Sendable {
        /// Seconds from the asset's start, as requested.
        public var requestedTime: Double
        /// The presentation time of the frame used.
        public var actualTime: Double
        /// Whether that frame is a keyframe.
        public var isKeyframe: Bool
        /// The file's bytes, in `format`.
        public var data: Data
        public var format: ImageFormat
        public var width: Int
        public var height: Int
    }

    /// What `images(for:)` yields per requested time: the picture, or why there is none.
    public struct Result: Sendable {
        public var requestedTime: Double
        public var outcome: Swift.Result<Image, ExportError>

        /// The picture, or the error that prevented it.
        public var image: Image {
            get throws(ExportError) { try outcome.get() }
        }
        /// The time of the frame used, or the error.
        public var actualTime: Double {
            get throws(ExportError) { try outcome.get().actualTime }
        }
    }

    public let asset: Asset
    /// Apply the video track's display matrix (rotation, mirror) to the pixels. Default true (Apple's
    /// is false): what a viewer sees.
    public var appliesPreferredTrackTransform = true
    /// Fit pictures into this box, aspect kept, never enlarged; `.zero` keeps the display size.
    public var maximumSize: Size = .zero
    /// How far before and after a requested time the frame may be, in seconds. Both `.infinity`
    /// (the default): the nearest keyframe, decoded alone (fast). Both zero: the frame shown at
    /// the requested time, decoded from the keyframe before it. In between: the nearest keyframe
    /// when it is within them, else the exact frame.
    public var requestedTimeToleranceBefore: Double = .infinity
    public var requestedTimeToleranceAfter: Double = .infinity
    /// The file format of the pictures (WebP needs FFmpeg built with libwebp: `ImageFormat.isAvailable`).
    public var format: ImageFormat = .jpeg
    /// 1...100 (100 best): JPEG's quantiser (100 → 2, 90 → 5), WebP's quality; PNG ignores it.
    public var quality = 90
    /// What the file is opened under.
    public var limits: InputLimits
    /// Threads the video decoder may use: a queued job's share of the cores; 0 (the default) lets it
    /// use every core, as `ExportSession.codecThreads`.
    public var codecThreads = 0
    /// Beats for every packet read (a thumbnail set's stall watch).
    var heartbeat: Heartbeat?

    public init(asset: Asset, limits: InputLimits = Asset.defaultLimits) {
        self.asset = asset
        self.limits = limits
    }

    /// Pictures at `times` (seconds), one result per time: first a failure (`invalid-argument`) for
    /// each time outside the asset (below 0 or past its duration), then the pictures in time order.
    /// When the reading fails part-way, every time not yet made gets a failure with the reason.
    /// Ending the iteration (or cancelling its task) stops the decoding.
    public func images(for times: [Double]) -> AsyncStream<Result> {
        let (stream, continuation) = AsyncStream<Result>.makeStream()
        let valid = times.filter { inside($0) }
        for time in times where !inside(time) {
            continuation.yield(Result(requestedTime: time, outcome: .failure(outside(time))))
        }
        let cancel = CancellationFlag()
        continuation.onTermination = { _ in cancel.raise() }
        let request = makeRequest(times: valid, sheet: nil)
        let format = format
        let heartbeat = heartbeat
        startThread(named: "reel-thumbnails") {
            // For the kernel too (`top -H`, /proc), and the decoder's threads inherit it.
            nameThisThread("reel-thumbnails")
            var done = 0
            do throws(ExportError) {
                try AssetImageGenerator.read(request, cancel: cancel, heartbeat: heartbeat) { image in
                    guard let pick = image.picks.first else { return }
                    done += 1
                    continuation.yield(
                        Result(
                            requestedTime: pick.requestedSeconds,
                            outcome: .success(
                                Image(
                                    requestedTime: pick.requestedSeconds, actualTime: pick.actualSeconds,
                                    isKeyframe: pick.isKeyframe, data: Data(image.data), format: format,
                                    width: image.width, height: image.height))))
                }
            } catch {
                // Every time not yet made fails with the reason.
                for time in valid.sorted().dropFirst(done) {
                    continuation.yield(Result(requestedTime: time, outcome: .failure(error)))
                }
            }
            continuation.finish()
        }
        return stream
    }

    /// One picture at `time`, and the time of the frame used.
    public func image(at time: Double) async throws(ExportError) -> (image: Image, actualTime: Double) {
        for await result in images(for: [time]) {
            let image = try result.image
            return (image, image.actualTime)
        }
        throw ExportError(.cancelled, "the picture was not made")
    }

    /// Sprite sheets: the pictures at `times` pasted into grids of `columns`×`rows` cells (left to
    /// right, top to bottom, in time order), one image per full grid and one for the rest. Each
    /// sheet's `picks` say which time went into which cell. Throws `invalid-argument` for a time
    /// outside the asset, before any work.
    public func sheets(for times: [Double], columns: Int, rows: Int) -> AsyncThrowingStream<ThumbnailSheet, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ThumbnailSheet, any Error>.makeStream()
        if let bad = times.first(where: { !inside($0) }) {
            continuation.finish(throwing: outside(bad))
            return stream
        }
        guard columns > 0, rows > 0 else {
            continuation.finish(throwing: ExportError(.invalidArgument, "a sheet needs at least one column and row"))
            return stream
        }
        let cancel = CancellationFlag()
        continuation.onTermination = { _ in cancel.raise() }
        let request = makeRequest(times: times, sheet: (columns, rows))
        let heartbeat = heartbeat
        startThread(named: "reel-thumbnails") {
            nameThisThread("reel-thumbnails")
            do throws(ExportError) {
                try AssetImageGenerator.read(request, cancel: cancel, heartbeat: heartbeat) { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    // MARK: - Internals

    private func inside(_ time: Double) -> Bool { time >= 0 && time <= asset.duration + 1e-6 }

    private func outside(_ time: Double) -> ExportError {
        ExportError(
            .invalidArgument,
            String(format: "the time %.3f s is outside the asset, which lasts %.3f s", time, asset.duration))
    }

    private func makeRequest(times: [Double], sheet: (columns: Int, rows: Int)?) -> ThumbnailRequest {
        var request = ThumbnailRequest(
            inputPath: asset.url.path, policy: limits, times: times,
            toleranceBefore: max(0, requestedTimeToleranceBefore), toleranceAfter: max(0, requestedTimeToleranceAfter),
            maximumWidth: max(0, maximumSize.width), maximumHeight: max(0, maximumSize.height),
            appliesTransform: appliesPreferredTrackTransform, format: format, quality: quality, sheet: sheet)
        request.byteRange = asset.byteRange
        request.threads = max(0, codecThreads)
        return request
    }

    /// Runs the reader, turning its errors into `ExportError`s (`no-video` for an asset without video).
    private static func read(
        _ request: ThumbnailRequest, cancel: CancellationFlag, heartbeat: Heartbeat?, deliver: (ThumbnailImage) -> Void
    ) throws(ExportError) {
        do {
            try ThumbnailReader.read(request, cancel: cancel, heartbeat: heartbeat) { image in deliver(image) }
        } catch {
            if error.call == "thumbnail", error.message.hasSuffix("has no video track") {
                throw ExportError(.noVideo, error.message)
            }
            throw ExportError(error)
        }
    }
}
