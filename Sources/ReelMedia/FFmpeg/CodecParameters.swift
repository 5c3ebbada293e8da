internal import CFFmpeg

/// Owns a copy of a stream's or codec's `AVCodecParameters` (freed with `avcodec_parameters_free`),
/// taken once and never changed afterwards.
///
/// This is how one side of a pipeline describes a stream to the other without sharing a context:
/// the audio encoder (reader side) tells the output file (writer side) what its stream holds, the
/// input stream tells the video encoder its colours. Immutable after `init`, so any thread may read
/// it: hence `@unchecked Sendable`.
final class CodecParameters: @unchecked Sendable {
    let pointer: UnsafePointer<AVCodecParameters>

    /// A copy of an opened codec context's parameters.
    init(of context: UnsafeMutablePointer<AVCodecContext>) throws(MediaError) {
        let copy = try CodecParameters.allocate()
        let code = avcodec_parameters_from_context(copy, context)
        pointer = UnsafePointer(copy)
        try check(code, "avcodec_parameters_from_context")
    }

    /// A copy of a stream's parameters.
    init(copying parameters: UnsafePointer<AVCodecParameters>) throws(MediaError) {
        let copy = try CodecParameters.allocate()
        let code = avcodec_parameters_copy(copy, parameters)
        pointer = UnsafePointer(copy)
        try check(code, "avcodec_parameters_copy")
    }

    deinit {
        var parameters: UnsafeMutablePointer<AVCodecParameters>? = UnsafeMutablePointer(mutating: pointer)
        avcodec_parameters_free(&parameters)
    }

    private static func allocate() throws(MediaError) -> UnsafeMutablePointer<AVCodecParameters> {
        guard let parameters = avcodec_parameters_alloc() else {
            throw MediaError(kind: .internalFailure, call: "avcodec_parameters_alloc", message: "out of memory")
        }
        return parameters
    }
}
