internal import CFFmpeg

/// Applies a display orientation to the pixels of a planar YUV frame, which swscale cannot do: an
/// optional left-right mirror, then a quarter turn clockwise, a half turn, or a quarter turn
/// counter-clockwise. Together these are the eight orientations a display matrix can give (a
/// top-bottom mirror is a left-right mirror and a half turn).
///
/// The destination frame has the oriented size: width and height swap for 90 and 270 degrees.
enum Rotator {
    /// Mirrors (when `mirrored`) then rotates every plane of `source` clockwise by `degrees` (0, 90,
    /// 180 or 270) into `destination`. Throws when a frame lacks a plane its pixel format has (frames
    /// must own their buffers).
    static func rotate(
        _ source: UnsafeMutablePointer<AVFrame>, into destination: UnsafeMutablePointer<AVFrame>, degrees: Int,
        mirrored: Bool = false
    ) throws(MediaError) {
        guard let descriptor = av_pix_fmt_desc_get(AVPixelFormat(rawValue: source.pointee.format)) else {
            throw MediaError(kind: .internalFailure, call: "rotate", message: "unknown pixel format")
        }
        let bytesPerSample = Int(descriptor.pointee.comp.0.step)  // planar formats: 1 or 2 bytes
        let planeCount = Int(av_pix_fmt_count_planes(AVPixelFormat(rawValue: source.pointee.format)))
        for plane in 0..<planeCount {
            let chroma = plane == 1 || plane == 2
            let shiftW = chroma ? Int(descriptor.pointee.log2_chroma_w) : 0
            let shiftH = chroma ? Int(descriptor.pointee.log2_chroma_h) : 0
            let width = (Int(source.pointee.width) + (1 << shiftW) - 1) >> shiftW
            let height = (Int(source.pointee.height) + (1 << shiftH) - 1) >> shiftH
            guard let sourcePlane = data(source, plane), let destinationPlane = data(destination, plane) else {
                throw MediaError(kind: .internalFailure, call: "rotate", message: "frame plane \(plane) has no data")
            }
            let sourceStride = Int(lineSize(source, plane))
            let destinationStride = Int(lineSize(destination, plane))
            if bytesPerSample == 2 {
                rotatePlane(
                    UnsafeRawPointer(sourcePlane).assumingMemoryBound(to: UInt16.self), sourceStride / 2,
                    UnsafeMutableRawPointer(destinationPlane).assumingMemoryBound(to: UInt16.self),
                    destinationStride / 2, width: width, height: height, degrees: degrees, mirrored: mirrored)
            } else {
                rotatePlane(
                    UnsafePointer(sourcePlane), sourceStride, destinationPlane, destinationStride,
                    width: width, height: height, degrees: degrees, mirrored: mirrored)
            }
        }
    }

    /// Orients one plane of `width`×`height` samples. Strides are in samples.
    ///
    /// Each source row lands on a line of the destination that starts at `start(y)` and advances by
    /// `step` per source column: one of eight (start, step) pairs, one per orientation.
    @inline(__always)
    static func rotatePlane<Sample>(
        _ source: UnsafePointer<Sample>, _ sourceStride: Int, _ destination: UnsafeMutablePointer<Sample>,
        _ destinationStride: Int, width: Int, height: Int, degrees: Int, mirrored: Bool = false
    ) {
        let stride = destinationStride
        let start: (Int) -> Int
        let step: Int
        switch (degrees, mirrored) {
        case (0, false):
            // Source (x, y) stays at (x, y).
            (start, step) = ({ $0 * stride }, 1)
        case (0, true):
            // (x, y) → (width-1-x, y).
            (start, step) = ({ $0 * stride + width - 1 }, -1)
        case (90, false):
            // (x, y) → (height-1-y, x).
            (start, step) = ({ height - 1 - $0 }, stride)
        case (90, true):
            // Mirrored first: (x, y) → (height-1-y, width-1-x).
            (start, step) = ({ (width - 1) * stride + height - 1 - $0 }, -stride)
        case (180, false):
            // (x, y) → (width-1-x, height-1-y).
            (start, step) = ({ (height - 1 - $0) * stride + width - 1 }, -1)
        case (180, true):
            // A top-bottom mirror: (x, y) → (x, height-1-y).
            (start, step) = ({ (height - 1 - $0) * stride }, 1)
        case (270, false):
            // (x, y) → (y, width-1-x).
            (start, step) = ({ (width - 1) * stride + $0 }, -stride)
        case (270, true):
            // A transpose: (x, y) → (y, x).
            (start, step) = ({ $0 }, stride)
        default:
            return
        }
        for y in 0..<height {
            let row = source + y * sourceStride
            let target = destination + start(y)
            if step == 1 {
                target.update(from: row, count: width)
            } else {
                for x in 0..<width { target[x * step] = row[x] }
            }
        }
    }

    /// The data pointer of plane `index` of a frame (`AVFrame.data` is a C array, imported as a
    /// tuple), nil when the frame has no such plane.
    private static func data(_ frame: UnsafeMutablePointer<AVFrame>, _ index: Int) -> UnsafeMutablePointer<UInt8>? {
        let offset =
            MemoryLayout<AVFrame>.offset(of: \AVFrame.data)! + index * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride
        return UnsafeMutableRawPointer(frame).load(fromByteOffset: offset, as: UnsafeMutablePointer<UInt8>?.self)
    }

    /// The line size (stride in bytes) of plane `index` of a frame.
    private static func lineSize(_ frame: UnsafeMutablePointer<AVFrame>, _ index: Int) -> Int32 {
        let offset = MemoryLayout<AVFrame>.offset(of: \AVFrame.linesize)! + index * MemoryLayout<Int32>.stride
        return UnsafeMutableRawPointer(frame).load(fromByteOffset: offset, as: Int32.self)
    }
}
