internal import CFFmpeg

/// Owns one `AVFrame` (freed with `av_frame_free`).
///
/// Not `Sendable`: a frame belongs to the thread of the pipeline stage that holds it.
final class Frame {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() throws(MediaError) {
        guard let frame = av_frame_alloc() else {
            throw MediaError(kind: .internalFailure, call: "av_frame_alloc", message: "out of memory")
        }
        pointer = frame
    }

    /// A video frame with its own buffers of the given size and pixel format.
    convenience init(width: Int32, height: Int32, format: AVPixelFormat) throws(MediaError) {
        try self.init()
        pointer.pointee.width = width
        pointer.pointee.height = height
        pointer.pointee.format = format.rawValue
        try check(av_frame_get_buffer(pointer, 0), "av_frame_get_buffer")
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }

    func unref() { av_frame_unref(pointer) }

    /// Gives this frame, a scaled copy of `picture`, the picture's timing, type and colour tags, with
    /// `pixelAspect` as its sample aspect ratio (a ladder's lower rungs, a search's samples of them).
    func takeProperties(of picture: UnsafeMutablePointer<AVFrame>, pixelAspect: AVRational) {
        pointer.pointee.pts = picture.pointee.pts
        pointer.pointee.pkt_duration = picture.pointee.pkt_duration
        pointer.pointee.pict_type = picture.pointee.pict_type
        pointer.pointee.sample_aspect_ratio = pixelAspect
        pointer.pointee.color_primaries = picture.pointee.color_primaries
        pointer.pointee.color_trc = picture.pointee.color_trc
        pointer.pointee.colorspace = picture.pointee.colorspace
        pointer.pointee.color_range = picture.pointee.color_range
    }

    /// Makes this frame, which must hold nothing, another reference to `other`'s buffers, with its
    /// properties (`av_frame_ref`): no pixels are copied.
    func reference(_ other: Frame) throws(MediaError) {
        try check(av_frame_ref(pointer, other.pointer), "av_frame_ref")
    }

    /// The first byte of plane `index` (0...7) and its stride in bytes, or nil when the frame has
    /// no such plane. (`AVFrame.data` and `linesize` are C arrays, imported as tuples.)
    func plane(_ index: Int) -> (bytes: UnsafeMutablePointer<UInt8>, stride: Int)? {
        guard (0..<8).contains(index) else { return nil }
        let bytes = withUnsafeBytes(of: pointer.pointee.data) {
            $0.load(
                fromByteOffset: index * MemoryLayout<UnsafeMutablePointer<UInt8>?>.stride,
                as: UnsafeMutablePointer<UInt8>?.self)
        }
        let stride = withUnsafeBytes(of: pointer.pointee.linesize) {
            $0.load(fromByteOffset: index * MemoryLayout<Int32>.stride, as: Int32.self)
        }
        return bytes.map { ($0, Int(stride)) }
    }

    /// Makes the buffers writable (copying them if an encoder still holds a reference).
    func makeWritable() throws(MediaError) {
        try check(av_frame_make_writable(pointer), "av_frame_make_writable")
    }
}
