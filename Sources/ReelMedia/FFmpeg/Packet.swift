internal import CFFmpeg

/// Owns one `AVPacket` (freed with `av_packet_free`). Reused across reads: `unref()` between uses.
///
/// Not `Sendable`: a packet belongs to the thread of the pipeline that reads it.
final class Packet {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() throws(MediaError) {
        guard let packet = av_packet_alloc() else {
            throw MediaError(kind: .internalFailure, call: "av_packet_alloc", message: "out of memory")
        }
        pointer = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }

    var streamIndex: Int { Int(pointer.pointee.stream_index) }

    /// Drops the data reference so the packet can be filled again.
    func unref() { av_packet_unref(pointer) }
}
