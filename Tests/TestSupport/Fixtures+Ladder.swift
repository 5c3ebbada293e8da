import Foundation

extension Fixtures {
    /// 640x360 H.264 + stereo AAC, 7 s at 29.97 fps (30000/1001: segment boundaries fall between
    /// frames, so a rung cut at the wrong frame shows): the source of a ladder whose 1280x720 rung
    /// is above it.
    public static let ladderSource = Recipe(
        "ladder-source.mp4",
        ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30000/1001:duration=7"] + audio(seconds: 7)
            + ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"] + aac)
}
