import Testing

/// What a suite needs beyond the test process itself. `Scripts/test --quick` runs only the suites
/// that carry none of these (pure logic, in under 90 s on two cores); the whole run, what CI runs,
/// runs them all. `TestTagTests` (DocumentationTests) checks that a suite whose file starts tools,
/// makes media, starts PostgreSQL or a browser says so.
extension Tag {
    /// Starts processes: `reel` itself, ffprobe, exiftool, mediainfo, git, swift.
    @Tag public static var process: Self
    /// Generates media with ffmpeg, or decodes and encodes it (exports, probes, thumbnails).
    @Tag public static var media: Self
    /// Needs the private PostgreSQL server the fleet's tests start.
    @Tag public static var postgres: Self
    /// Needs headless Chromium.
    @Tag public static var browser: Self
}
