import Foundation

extension Fixtures {
    /// 640x360 testsrc2 at 25 fps, 12 s, H.264 with B-frames (x264 veryfast) and a keyframe every
    /// 2 s exactly (no scene cuts): decode and presentation times differ, as in phone files, and the
    /// keyframes are where a test can know them.
    public static let gop = Recipe(
        "gop-12s.mp4",
        video("640x360", rate: 25, seconds: 12) + [
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "50", "-keyint_min", "50",
            "-sc_threshold", "0",
        ])

    /// 20 s with one keyframe every 10 s (at 0 and 10), as phone and screen recordings often have.
    public static let longGOP = Recipe(
        "gop-10s-keyframes.mp4",
        video("320x180", rate: 25, seconds: 20) + [
            "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-g", "250", "-keyint_min", "250",
            "-sc_threshold", "0",
        ])
}

/// Still images checked against ffmpeg's own frames.
public enum Stills {
    /// PSNR of the still `image` against ffmpeg's frame of `source` at `time` (the first frame
    /// presented at or after it, ffmpeg's accurate input seek, 1 ms early against rounding),
    /// after `filters` (orientation), scaled to the image's size (or `size`, when `imageFilters` crop
    /// the image); both as 8-bit 4:2:0.
    /// ffmpeg applies a rotation tag itself unless `noAutorotate`.
    public static func psnr(
        _ image: URL, against source: URL, at time: Double, filters: String? = nil, noAutorotate: Bool = false,
        imageFilters: String? = nil, size: (width: Int, height: Int)? = nil
    ) async throws -> Pictures.PSNR {
        guard let video = try await ProbedFile.probe(image).video, let probedWidth = video.width,
            let probedHeight = video.height
        else { throw ToolFailure(message: "no picture in \(image.path)") }
        let (width, height) = size ?? (probedWidth, probedHeight)
        let chain = (filters.map { $0 + "," } ?? "") + "scale=\(width):\(height),format=yuv420p"
        let graph =
            "[0:v]\(imageFilters.map { $0 + "," } ?? "")format=yuv420p[a];[1:v]trim=end_frame=1,\(chain)[b];[a][b]psnr"
        let seek = String(format: "%.6f", max(0, time - 0.001))
        let result = try await Tools.run(
            "ffmpeg",
            ["-nostdin", "-hide_banner", "-i", image.path] + (noAutorotate ? ["-noautorotate"] : []) + [
                "-ss", seek, "-i", source.path, "-lavfi", graph, "-f", "null", "-",
            ])
        guard result.status == 0 else { throw ToolFailure(message: "psnr of \(image.path): \(result.stderr)") }
        guard let line = result.stderr.split(separator: "\n").last(where: { $0.contains("PSNR y:") }) else {
            throw ToolFailure(message: "no PSNR line: \(result.stderr)")
        }
        func field(_ name: String) -> Double {
            guard let range = line.range(of: " " + name + ":") else { return .nan }
            let rest = line[range.upperBound...].prefix { !$0.isWhitespace }
            return rest == "inf" ? .infinity : Double(rest) ?? .nan
        }
        return Pictures.PSNR(y: field("y"), u: field("u"), v: field("v"), average: field("average"))
    }

    /// The presentation times of the video's frames, and which are keyframes, as ffprobe reads the
    /// packets.
    public static func frames(_ url: URL) async throws -> [(time: Double, key: Bool)] {
        let result = try await Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                url.path,
            ])
        guard result.status == 0 else { throw ToolFailure(message: "ffprobe: \(result.stderr)") }
        return result.stdout.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: ",")
            guard parts.count >= 2, let time = Double(parts[0]) else { return nil }
            return (time, parts[1].contains("K"))
        }.sorted { $0.time < $1.time }
    }
}
