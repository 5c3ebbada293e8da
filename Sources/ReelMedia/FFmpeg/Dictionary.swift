internal import CFFmpeg

/// An `AVDictionary` of options for one call, freed when the value goes away.
///
/// FFmpeg removes every key it recognised; `leftoverKeys` lists the rest, which callers treat as
/// unrecognised options.
final class OptionDictionary {
    var pointer: OpaquePointer?

    init(_ entries: [(String, String)] = []) throws(MediaError) {
        for (key, value) in entries { try set(key, value) }
    }

    deinit { av_dict_free(&pointer) }

    func set(_ key: String, _ value: String) throws(MediaError) {
        try check(av_dict_set(&pointer, key, value, 0), "av_dict_set", context: key)
    }

    /// Keys FFmpeg did not consume.
    var leftoverKeys: [String] { readDictionary(pointer).map(\.key).sorted() }
}

/// Reads every entry of an `AVDictionary` (metadata of a file or stream).
func readDictionary(_ dictionary: OpaquePointer?) -> [String: String] {
    var result: [String: String] = [:]
    var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
    while true {
        entry = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX)
        guard let current = entry else { break }
        result[String(cString: current.pointee.key)] = String(cString: current.pointee.value)
    }
    return result
}
