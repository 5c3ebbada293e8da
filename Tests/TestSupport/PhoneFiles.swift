import Foundation

/// The few real phone files committed under `Tests/Fixtures/` (their sources and licences are in
/// `Tests/Fixtures/SOURCES.md`); everything else is generated at test time.
public enum PhoneFiles {
    /// `Tests/Fixtures` in this checkout.
    public static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures").standardizedFileURL

    /// The file's path; a missing file is an error naming it, never a skipped test.
    public static func path(_ name: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        guard FileManager.default.fileExists(atPath: path) else { throw Missing(path: path) }
        return path
    }

    /// An iPhone 11 Pro HEIC still (a grid of HEVC tiles, Exif, an Apple content identifier).
    public static var heic: String { get throws { try path("IMG_2927.HEIC") } }
    /// An iPhone 6 video with GPS in QuickTime keys and `mebx` tracks.
    public static var movie: String { get throws { try path("with-gps.mov") } }
    /// A Google Motion Photo v1 JPEG: its MP4 is the file's last 122,562 bytes.
    public static var motionPhoto: String { get throws { try path("mphoto_motion_photo.jpeg") } }
    /// The same XMP as ``motionPhoto`` with no video appended: a plain photo.
    public static var lyingMotionPhoto: String { get throws { try path("mphoto_still_lying.jpeg") } }

    /// A committed fixture that is not there: the test fails with its path.
    public struct Missing: Error, CustomStringConvertible {
        public let path: String
        public var description: String { "the committed fixture \(path) is missing (Tests/Fixtures/SOURCES.md)" }
    }
}
