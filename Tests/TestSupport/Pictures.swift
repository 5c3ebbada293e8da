import Foundation

/// Measures pictures with ffmpeg's own filters (psnr, signalstats) and reads decoded frames as bytes.
public enum Pictures {
    /// PSNR in dB of each plane and their weighted average, as ffmpeg's psnr filter reports it.
    public struct PSNR: Sendable, CustomStringConvertible {
        public var y: Double
        public var u: Double
        public var v: Double
        public var average: Double
        public var description: String {
            String(format: "y %.2f u %.2f v %.2f average %.2f dB", y, u, v, average)
        }
    }

    /// The PSNR of `url`'s video against `reference`'s, frame by frame, both as 8-bit 4:2:0; the
    /// reference first goes through `referenceFilters` (e.g. `hflip`) when given.
    ///
    /// Frames are paired by their order, not their timestamps: Matroska's millisecond timestamps
    /// (33, 67 ms) against MP4's exact ones (33.3, 66.7 ms) would pair some frames with their neighbours.
    public static func psnr(_ url: URL, against reference: URL, referenceFilters: String? = nil) async throws -> PSNR {
        let byOrder = "settb=1/30,setpts=N,"
        let graph =
            "[0:v]\(byOrder)format=yuv420p[a];[1:v]\(byOrder)" + (referenceFilters.map { $0 + "," } ?? "")
            + "format=yuv420p[b];[a][b]psnr"
        let result = try await Tools.run(
            "ffmpeg",
            ["-nostdin", "-hide_banner", "-i", url.path, "-i", reference.path, "-lavfi", graph, "-f", "null", "-"])
        guard result.status == 0 else { throw ToolFailure(message: "psnr of \(url.path): \(result.stderr)") }
        guard let line = result.stderr.split(separator: "\n").last(where: { $0.contains("PSNR y:") }) else {
            throw ToolFailure(message: "no PSNR line: \(result.stderr)")
        }
        func field(_ name: String) -> Double {
            guard let range = line.range(of: name + ":") else { return .nan }
            let rest = line[range.upperBound...].prefix { !$0.isWhitespace }
            return rest == "inf" ? .infinity : Double(rest) ?? .nan
        }
        return PSNR(y: field("y"), u: field("u"), v: field("v"), average: field("average"))
    }

    /// ffmpeg's SSIM (the `All` figure, 0...1) of `url`'s first picture against `reference`'s, both as
    /// 8-bit 4:2:0; the pictures must be of one size.
    public static func ssim(_ url: URL, against reference: URL) async throws -> Double {
        let result = try await Tools.run(
            "ffmpeg",
            [
                "-nostdin", "-hide_banner", "-i", url.path, "-i", reference.path, "-lavfi",
                "[0:v]format=yuv420p[a];[1:v]format=yuv420p[b];[a][b]ssim", "-frames:v", "1", "-f", "null", "-",
            ])
        guard result.status == 0, let match = result.stderr.firstMatch(of: #/All:([0-9.]+)/#),
            let value = Double(match.1)
        else { throw ToolFailure(message: "ssim of \(url.path): \(result.stderr)") }
        return value
    }

    /// Mean luma (YAVG) and mean saturation (SATAVG) over every frame, from ffmpeg's signalstats, in
    /// 8-bit code values.
    public static func averages(_ url: URL, filters: String? = nil) async throws -> (luma: Double, saturation: Double) {
        let chain = (filters.map { $0 + "," } ?? "") + "format=yuv420p,signalstats,metadata=print:file=-"
        let result = try await Tools.run(
            "ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-i", url.path, "-vf", chain, "-f", "null", "-"])
        guard result.status == 0 else { throw ToolFailure(message: "signalstats of \(url.path): \(result.stderr)") }
        var luma: [Double] = []
        var saturation: [Double] = []
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]) else { continue }
            if parts[0].hasSuffix(".YAVG") { luma.append(value) }
            if parts[0].hasSuffix(".SATAVG") { saturation.append(value) }
        }
        guard !luma.isEmpty, luma.count == saturation.count else { throw ToolFailure(message: "no signalstats") }
        return (luma.reduce(0, +) / Double(luma.count), saturation.reduce(0, +) / Double(saturation.count))
    }

    /// The first frame of `url`'s video as `pixelFormat` bytes (`gray`, `rgb24`), converted by
    /// `filters` first when given (e.g. `scale=in_color_matrix=bt709:in_range=tv`).
    public static func firstFrame(_ url: URL, pixelFormat: String, filters: String? = nil) async throws -> (
        width: Int, height: Int, bytes: [UInt8]
    ) {
        guard let video = try await ProbedFile.probe(url).video, let width = video.width, let height = video.height
        else { throw ToolFailure(message: "no video in \(url.path)") }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("frame-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: file) }
        let chain = (filters.map { $0 + "," } ?? "") + "format=\(pixelFormat)"
        try await Tools.ffmpeg(["-i", url.path, "-frames:v", "1", "-vf", chain, "-f", "rawvideo", file.path])
        let bytes = [UInt8](try Data(contentsOf: file))
        return (width, height, bytes)
    }
}
