import Foundation

/// CIEDE2000, the colour difference that sees hue as well as lightness and saturation: of a video
/// against the SDR original it should match, measured by the repository's `Scripts/deltae.py`
/// (NumPy and ffmpeg; `Scripts/setup` installs them), and of single colours, the same formula here.
public enum ColourDifference {
    /// Mean and 95th percentile of CIEDE2000 over the compared frames; with an HDR source, the same
    /// for zimg's exact inverse of it and the excess (the video's mean minus zimg's).
    public struct Score: Decodable, Sendable, CustomStringConvertible {
        public var mean: Double
        public var p95: Double
        public var zimg_mean: Double?
        public var zimg_p95: Double?
        public var excess: Double?

        public var description: String {
            "mean ΔE2000 \(mean) (p95 \(p95))"
                + (excess.map { " against zimg's \(zimg_mean ?? .nan): excess \($0)" } ?? "")
        }
    }

    /// CIE L*a*b* (D65) of an sRGB-encoded colour (0...255 per channel), as `Scripts/deltae.py` makes it.
    public static func lab(_ rgb: [Double]) -> [Double] {
        let linear = rgb.map { v -> Double in
            let c = v / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let xyz = [
            (0.4124 * linear[0] + 0.3576 * linear[1] + 0.1805 * linear[2]) / 0.95047,
            0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2],
            (0.0193 * linear[0] + 0.1192 * linear[1] + 0.9505 * linear[2]) / 1.08883,
        ]
        let f = xyz.map { $0 > 0.008856 ? cbrt($0) : 7.787 * $0 + 16 / 116 }
        return [116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])]
    }

    /// CIEDE2000 (kL = kC = kH = 1) between two L*a*b* colours: `Scripts/deltae.py`'s formula for one pair.
    public static func ciede2000(_ lab1: [Double], _ lab2: [Double]) -> Double {
        let degrees = 180 / Double.pi
        let cMean = (hypot(lab1[1], lab1[2]) + hypot(lab2[1], lab2[2])) / 2
        let g = 0.5 * (1 - (pow(cMean, 7) / (pow(cMean, 7) + pow(25, 7))).squareRoot())
        let a1 = (1 + g) * lab1[1]
        let a2 = (1 + g) * lab2[1]
        let c1 = hypot(a1, lab1[2])
        let c2 = hypot(a2, lab2[2])
        func hue(_ b: Double, _ a: Double) -> Double {
            let h = atan2(b, a) * degrees
            return h < 0 ? h + 360 : h
        }
        let h1 = hue(lab1[2], a1)
        let h2 = hue(lab2[2], a2)
        var dh = h2 - h1
        if dh > 180 { dh -= 360 }
        if dh < -180 { dh += 360 }
        if c1 * c2 == 0 { dh = 0 }
        let dH = 2 * (c1 * c2).squareRoot() * sin(dh / 2 / degrees)
        let lMean = (lab1[0] + lab2[0]) / 2
        let cpMean = (c1 + c2) / 2
        var hMean = abs(h1 - h2) > 180 ? (h1 + h2 + 360) / 2 : (h1 + h2) / 2
        if c1 * c2 == 0 { hMean = h1 + h2 }
        let t =
            1 - 0.17 * cos((hMean - 30) / degrees) + 0.24 * cos(2 * hMean / degrees)
            + 0.32 * cos((3 * hMean + 6) / degrees) - 0.20 * cos((4 * hMean - 63) / degrees)
        let dTheta = 30 * exp(-pow((hMean - 275) / 25, 2))
        let rc = 2 * (pow(cpMean, 7) / (pow(cpMean, 7) + pow(25, 7))).squareRoot()
        let sl = 1 + 0.015 * pow(lMean - 50, 2) / (20 + pow(lMean - 50, 2)).squareRoot()
        let sc = 1 + 0.045 * cpMean
        let sh = 1 + 0.015 * cpMean * t
        let rt = -sin(2 * dTheta / degrees) * rc
        let (l, c, h) = ((lab2[0] - lab1[0]) / sl, (c2 - c1) / sc, dH / sh)
        return (l * l + c * c + h * h + rt * c * h).squareRoot()
    }

    /// `Scripts/deltae.py` in this checkout.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Scripts/deltae.py").standardizedFileURL.path

    /// Scores `url` against `original` on the frames at `times` (seconds); with `hdrSource`, the
    /// HLG or PQ file `url` was converted from, also zimg's exact conversion of it.
    public static func score(
        _ url: URL, against original: URL, hdrSource: URL? = nil, times: [Double]
    ) async throws -> Score {
        var arguments = [script, url.path, original.path, "--json", "--times"]
        arguments.append(times.map { String($0) }.joined(separator: ","))
        if let hdrSource { arguments += ["--hdr", hdrSource.path] }
        let result = try await Tools.run("python3", arguments)
        guard result.status == 0, let line = result.stdout.split(separator: "\n").last else {
            throw ToolFailure(message: "deltae.py failed (\(result.status)): \(result.stderr)")
        }
        return try JSONDecoder().decode(Score.self, from: Data(line.utf8))
    }
}
