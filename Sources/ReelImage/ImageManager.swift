import Foundation
import Synchronization

/// A size in pixels, as PhotoKit's `targetSize` is. `maximum` is `PHImageManagerMaximumSize`: the whole
/// picture, no scaling and no crop.
public struct ImageTargetSize: Sendable, Equatable {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// The largest image available: no scaling, content mode and resize mode ignored.
    public static let maximum = ImageTargetSize(width: 0, height: 0)
}

/// PhotoKit's `PHImageContentMode`.
public enum ImageContentMode: String, Sendable, Codable, CaseIterable {
    /// The picture fits inside the target size (the default).
    case aspectFit
    /// The picture covers the target size, cropped to it from the centre.
    case aspectFill
}

/// A unit rectangle of the upright picture, (0, 0) top left to (1, 1) bottom right (PhotoKit's
/// `normalizedCropRect`).
public struct NormalizedRect: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

/// PhotoKit's `PHImageRequestOptions`, for a photo file.
public struct ImageRequestOptions: Sendable, Equatable {
    /// PhotoKit's `PHImageRequestOptionsDeliveryMode`.
    public enum DeliveryMode: String, Sendable, Codable, CaseIterable {
        /// A degraded image first when the photo has a cheaper picture (a HEIF's embedded thumbnail, a
        /// JPEG decoded at 1/8), then the final one: the default for asynchronous requests.
        case opportunistic
        /// One result, the final image.
        case highQualityFormat = "high-quality"
        /// One result, the degraded image when the photo has one, else the final one.
        case fastFormat = "fast"
    }

    /// PhotoKit's `PHImageRequestOptionsVersion`. A photo file has one picture, so every version is the
    /// file's; a library asset with an edit chooses its file by version before asking for an image.
    public enum Version: String, Sendable, Codable, CaseIterable {
        case current, unadjusted, original
    }

    public var deliveryMode: DeliveryMode = .opportunistic
    public var resizeMode: PhotoResizeMode = .fast
    /// The part of the upright picture to render; nil (PhotoKit's empty rectangle) for all of it. Needs
    /// `resizeMode` exact.
    public var normalizedCropRect: NormalizedRect? = nil
    public var version: Version = .current
    /// How the image is encoded (PhotoKit returns a `UIImage`; Reel returns encoded bytes).
    public var format: ImageOutputFormat = .jpeg
    public var quality = 90
    public var metadata: PhotoMetadata = .strip

    public init() {}
}

/// PhotoKit's `PHImageRequestID`: names a request for `cancelImageRequest(_:)`.
public typealias ImageRequestID = Int32

/// One image a request delivers, with PhotoKit's result keys as fields.
public struct ImageResult: Sendable {
    public var image: RenderedPhoto
    /// `PHImageResultIsDegradedKey`: a quick, low-quality image; the final one follows in an
    /// opportunistic request.
    public var isDegraded: Bool
    /// `PHImageResultRequestIDKey`.
    public var requestID: ImageRequestID
}

/// PhotoKit's `PHImageManager` for photo files: `requestImage(for:targetSize:contentMode:options:)`
/// returns the request's results as an `AsyncSequence` (the degraded image first when the delivery mode
/// is opportunistic and the photo has one, then the final one) instead of calling a handler twice, and
/// `cancelImageRequest(_:)` ends a request: its sequence then throws `CancellationError` at its next
/// element, and a result being rendered at that moment is dropped. The work happens as the sequence is
/// iterated, each render on a thread of its own, off Swift's cooperative pool; cancelling the task that
/// iterates cancels the request too.
public final class ImageManager: Sendable {
    /// A manager with the standard pixel limit.
    public static let `default` = ImageManager()

    /// The most pixels a photo may declare; checked from its header before anything is decoded.
    public let maxPixels: Int
    private let state = Mutex(
        (next: ImageRequestID(1), active: Set<ImageRequestID>(), cancelled: Set<ImageRequestID>()))

    public init(maxPixels: Int = PhotoRenderer.defaultMaxPixels) {
        self.maxPixels = maxPixels
    }

    /// The images of the photo at `url`, sized as PhotoKit sizes them: `targetSize` in pixels (never
    /// enlarged), `contentMode` fit or fill, with `options`' delivery, resize mode and crop.
    public func requestImage(
        for url: URL, targetSize: ImageTargetSize, contentMode: ImageContentMode = .aspectFit,
        options: ImageRequestOptions = ImageRequestOptions()
    ) -> ImageRequest {
        let id = state.withLock { state in
            let id = state.next
            state.next = state.next == .max ? 1 : state.next + 1
            state.active.insert(id)
            return id
        }
        let maximum = targetSize == .maximum
        var render = PhotoRenderOptions(
            maxWidth: maximum ? 0 : max(1, targetSize.width), maxHeight: maximum ? 0 : max(1, targetSize.height),
            fill: !maximum && contentMode == .aspectFill, format: options.format, quality: options.quality,
            metadata: options.metadata)
        // PhotoKit's maximum size ignores the resize mode and the crop; a crop is rendered exactly.
        render.resizeMode = maximum ? .exact : options.resizeMode
        if !maximum, let crop = options.normalizedCropRect {
            render.crop = (crop.x, crop.y, crop.width, crop.height)
        }
        return ImageRequest(
            requestID: id, manager: self, ticket: ImageRequest.Ticket(id, self), path: url.path, render: render,
            deliveryMode: options.deliveryMode)
    }

    /// Cancels the request `requestID` (PhotoKit's `cancelImageRequest(_:)`); a request that has ended
    /// is left as it is.
    public func cancelImageRequest(_ requestID: ImageRequestID) {
        state.withLock { state in
            if state.active.contains(requestID) { state.cancelled.insert(requestID) }
        }
    }

    /// Whether `id` was cancelled; a cancelled request is forgotten once it has seen so.
    func takeCancelled(_ id: ImageRequestID) -> Bool {
        state.withLock { state in
            guard state.cancelled.remove(id) != nil else { return false }
            state.active.remove(id)
            return true
        }
    }

    func finished(_ id: ImageRequestID) {
        state.withLock { state in
            state.cancelled.remove(id)
            state.active.remove(id)
            return
        }
    }
}

/// One image request's results, in order: at most a degraded image, then the final one.
public struct ImageRequest: AsyncSequence, Sendable {
    public typealias Element = ImageResult

    public let requestID: ImageRequestID
    let manager: ImageManager
    /// Forgets the request in its manager once the request and its iterators are gone, iterated to the
    /// end or not.
    let ticket: Ticket
    let path: String
    let render: PhotoRenderOptions
    let deliveryMode: ImageRequestOptions.DeliveryMode

    public func makeAsyncIterator() -> Iterator { Iterator(request: self) }

    final class Ticket: Sendable {
        let id: ImageRequestID
        let manager: ImageManager
        init(_ id: ImageRequestID, _ manager: ImageManager) {
            self.id = id
            self.manager = manager
        }
        deinit { manager.finished(id) }
    }

    public struct Iterator: AsyncIteratorProtocol {
        enum Stage { case start, final, done }

        let request: ImageRequest
        var stage = Stage.start

        public mutating func next() async throws -> ImageResult? {
            switch stage {
            case .done:
                return nil
            case .start:
                try checkCancelled()
                if request.deliveryMode != .highQualityFormat,
                    let quick = try? await PhotoRenderer.renderingDegraded(
                        request.path, request.render, maxPixels: request.manager.maxPixels)
                {
                    try checkCancelled()
                    stage = request.deliveryMode == .fastFormat ? .done : .final
                    if stage == .done { request.manager.finished(request.requestID) }
                    return ImageResult(image: quick, isDegraded: true, requestID: request.requestID)
                }
                return try await final()
            case .final:
                return try await final()
            }
        }

        private mutating func final() async throws -> ImageResult {
            try checkCancelled()
            stage = .done
            do {
                let image = try await PhotoRenderer.rendering(
                    request.path, request.render, maxPixels: request.manager.maxPixels)
                try checkCancelled()
                request.manager.finished(request.requestID)
                return ImageResult(image: image, isDegraded: false, requestID: request.requestID)
            } catch {
                request.manager.finished(request.requestID)
                throw error
            }
        }

        private mutating func checkCancelled() throws {
            if request.manager.takeCancelled(request.requestID) || Task.isCancelled {
                stage = .done
                request.manager.finished(request.requestID)
                throw CancellationError()
            }
        }
    }
}
