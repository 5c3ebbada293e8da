import Foundation

/// Animated images with uneven frame delays and transparency, made with ffmpeg at test time.
extension Fixtures {
    /// 101x75, six frames shown at 0, 0.2, 0.3, 0.5, 0.6, 0.7 s; the left 40 columns transparent, the
    /// rest opaque (red 255 right of column 50, green 255 above row 30, blue 128).
    public static let animatedPicture =
        "color=c=red:s=101x75:r=10:d=0.6,format=rgba,"
        + "geq=r='255*gt(X,50)':g='255*lt(Y,30)':b='128':a='if(lt(X,40),0,255)',"
        + "setpts='if(eq(N,0),0,if(eq(N,1),20,if(eq(N,2),25,if(eq(N,3),55,if(eq(N,4),60,75)))))/100/TB'"

    /// `animatedPicture` as a GIF (one palette entry kept for transparency).
    public static let animatedGIF = Recipe(
        "uneven.gif",
        [
            "-f", "lavfi", "-i",
            animatedPicture
                + ",split[a][b];[a]palettegen=reserve_transparent=1[p];[b][p]paletteuse=alpha_threshold=128",
            "-fps_mode", "vfr", "-f", "gif",
        ])

    /// `animatedPicture` as an animated PNG.
    public static let animatedPNG = Recipe(
        "uneven.png", ["-f", "lavfi", "-i", animatedPicture, "-fps_mode", "vfr", "-f", "apng"])

    /// The mean colour (red, green, blue) of a 20x20 patch of the first frame of `url`, as ffmpeg
    /// decodes it.
    public static func patch(_ url: URL, x: Int, y: Int) async throws -> [Int] {
        let raw = scratchFolder("patch").appendingPathComponent("patch.rgb")
        try await Tools.ffmpeg([
            "-i", url.path, "-vf", "crop=20:20:\(x):\(y),format=rgb24,scale=1:1:flags=area", "-frames:v", "1", "-f",
            "rawvideo", raw.path,
        ])
        return Array(try Data(contentsOf: raw).prefix(3)).map(Int.init)
    }
}
