internal import CVipsShim
import Foundation

/// libvips, started once per process (VIPS_INIT in the shim, behind pthread_once) with a small
/// operation cache. libvips is thread-safe; this type keeps no Swift state, so any thread or task may
/// call it.
enum Vips {
    /// Starts libvips if this is the first call; throws when it cannot start.
    static func start() throws(PhotoError) {
        if reel_vips_start() != 0 {
            throw PhotoError(.unavailable, "libvips could not start: \(takeError() ?? "no reason given")")
        }
    }

    /// vips's error text since the last call, as one line, and clears it. vips keeps one buffer per
    /// process: a failure on another thread at the same moment may add its line here.
    static func takeError() -> String? {
        guard let text = reel_vips_take_error() else { return nil }
        defer { reel_vips_free(text) }
        return String(cString: text)
    }

    /// A failure of the call just made, naming `path`: vips's own words, or `fallback` when it left
    /// none.
    static func failure(_ code: PhotoError.Code, _ path: String, _ fallback: String) -> PhotoError {
        let name = (path as NSString).lastPathComponent
        return PhotoError(code, "\(name): \(takeError().map(tidy) ?? fallback)")
    }

    /// vips's messages start with the operation's nickname and repeat the file name; keep the cause.
    static func tidy(_ text: String) -> String {
        var line = text
        for prefix in ["VipsForeignLoad", "VipsForeignSave"] where line.hasPrefix(prefix) {
            if let colon = line.firstIndex(of: ":") { line = String(line[line.index(after: colon)...]) }
        }
        return line.trimmingCharacters(in: .whitespaces)
    }
}

/// One libvips image, released when the owner goes.
final class VipsImage {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { reel_vips_release(pointer) }

    var width: Int { Int(reel_vips_width(pointer)) }
    var height: Int { Int(reel_vips_height(pointer)) }
    var bands: Int { Int(reel_vips_bands(pointer)) }
    var orientation: Int { Int(reel_vips_orientation(pointer)) }
    var pages: Int { Int(reel_vips_pages(pointer)) }
    var bits: Int { Int(reel_vips_bits(pointer)) }
    var interpretation: String { reel_vips_interpretation(pointer).map { String(cString: $0) } ?? "unknown" }

    func string(_ name: String) -> String? {
        reel_vips_string(pointer, name).map { String(cString: $0) }
    }

    func blob(_ name: String) -> [UInt8]? {
        var length = 0
        guard let data = reel_vips_blob(pointer, name, &length), length > 0 else { return nil }
        return [UInt8](UnsafeRawBufferPointer(start: data, count: length))
    }
}
