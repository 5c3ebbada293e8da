internal import CFFmpeg

/// Applies a display rotation (a quarter turn clockwise, a half turn, or a quarter turn
/// counter-clockwise) to the pixels of a planar YUV frame, which swscale cannot do.
///
/// The destination frame has the rotated size: width and height swap for 90 and 270 degrees.
enum Rotator {
    /// Rotates every plane of `source` clockwise by `degrees` (90, 180 or 270) into `destination`.
    /// Throws when a frame lacks a plane its pixel format has (frames must own their buffers).
    static func rotate(
        _ source: UnsafeMutablePointer<AVFrame>, into destination: UnsafeMutablePointer<AVFrame>, degrees: Int
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
                    destinationStride / 2, width: width, height: height, degrees: degrees)
            } else {
                rotatePlane(
                    UnsafePointer(sourcePlane), sourceStride, destinationPlane, destinationStride,
                    width: width, height: height, degrees: degrees)
            }
        }
    }

    /// Rotates one plane of `width`×`height` samples. Strides are in samples.
    @inline(__always)
    static func rotatePlane<Sample>(
        _ source: UnsafePointer<Sample>, _ sourceStride: Int, _ destination: UnsafeMutablePointer<Sample>,
        _ destinationStride: Int, width: Int, height: Int, degrees: Int
    ) {
        switch degrees {
        case 90:
            // Source (x, y) lands at destination (height-1-y, x).
            for y in 0..<height {
                let row = source + y * sourceStride
                let column = height - 1 - y
                for x in 0..<width { destination[x * destinationStride + column] = row[x] }
            }
        case 270:
            // Source (x, y) lands at destination (y, width-1-x).
            for y in 0..<height {
                let row = source + y * sourceStride
                for x in 0..<width { destination[(width - 1 - x) * destinationStride + y] = row[x] }
            }
        case 180:
            for y in 0..<height {
                let row = source + y * sourceStride
                let target = destination + (height - 1 - y) * destinationStride
                for x in 0..<width { target[width - 1 - x] = row[x] }
            }
        default:
            break
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
