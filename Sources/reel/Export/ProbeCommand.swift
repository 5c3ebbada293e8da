import ArgumentParser
import Foundation
import ReelExport
import ReelMedia

#if Photos
    import ReelImage
#endif

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe", abstract: "Show what a media file contains: duration, tracks, rotation, metadata.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions
    @OptionGroup(title: "Remote assets") var remote: RemoteOptions

    @Argument(help: "The media file to probe, or an https URL (with --network-access).")
    var asset: String

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() async throws {
        global.bootstrapLogging()
        let local = try await LocalInput.resolve(asset, remote: remote, limits: input.limits, json: false)
        defer { local.cleanUp() }
        do {
            try await probe(local)
        } catch {
            throw local.rename(error)
        }
    }

    private func probe(_ local: LocalInput) async throws {
        let limits = local.limits(input.limits)
        if let photo = PhotoInput.signature(local.path) {
            return try await probePhoto(photo, local, limits: limits)
        }
        let probed = try await Asset.load(URL(fileURLWithPath: local.path), limits: limits)
        var report = ProbeReport(probed)
        report.path = local.shown
        if json {
            CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(report), as: UTF8.self))
        } else {
            report.printText()
        }
    }
}

extension ProbeCommand {
    /// A photo: its picture as ReelImage (libvips, libheif) reads it, and its metadata as the photo
    /// library's parsers read it when indexing (capture date with its zone, location, device, content
    /// identifier).
    func probePhoto(_ photo: PhotoSignature, _ local: LocalInput, limits: InputLimits) async throws {
        #if Photos
            let info = try await PhotoInput.info(local.path, limits: limits)
            let report = PhotoProbeReport(
                path: local.shown, info: info, facts: PhotoProbeReport.facts(local.path, limits))
            if json {
                CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(report), as: UTF8.self))
            } else {
                report.printText()
            }
        #else
            throw LeftOut.photos.failure
        #endif
    }
}

/// What `reel probe` prints.
struct ProbeReport: Encodable {
    var path: String
    var container: String
    var durationSeconds: Double
    var bytes: Int64
    var bitRate: Int?
    var displayWidth: Int?
    var displayHeight: Int?
    var rotation: Int
    /// Whether the display matrix mirrors the picture (before the rotation).
    var mirrored: Bool
    /// The video's dynamic range as people name it (`HLG`, `HDR10`, `Dolby Vision 8.4 (HLG base
    /// layer)`), nil for SDR; the tracks carry the details.
    var hdr: String?
    var creationDate: Date?
    var location: String?
    var make: String?
    var model: String?
    var contentIdentifier: String?
    var metadata: [String: String]
    var tracks: [AssetTrack]

    init(_ asset: Asset) {
        path = asset.url.path
        container = asset.container
        durationSeconds = asset.duration
        bytes = asset.fileBytes
        bitRate = asset.bitRate
        displayWidth = asset.displaySize?.width
        displayHeight = asset.displaySize?.height
        rotation = asset.rotation
        mirrored = asset.videoTrack?.isMirrored ?? false
        hdr = asset.videoTrack.flatMap(ProbeReport.hdrName)
        creationDate = asset.creationDate
        location = asset.location
        make = asset.make
        model = asset.model
        contentIdentifier = asset.contentIdentifier
        metadata = asset.metadata
        tracks = asset.tracks
    }

    func printText() {
        CLI.printLine(path)
        CLI.printLine(
            "  container  \(container), \(String(format: "%.3f", durationSeconds)) s, \(CLI.formatBytes(bytes))"
                + (bitRate.map { ", \($0 / 1000) kb/s" } ?? ""))
        if let displayWidth, let displayHeight {
            CLI.printLine(
                "  display    \(displayWidth)x\(displayHeight)" + (mirrored ? ", mirrored" : "")
                    + (rotation != 0 ? ", rotated \(rotation)°" : "") + (hdr.map { ", \($0)" } ?? ""))
        }
        if let creationDate { CLI.printLine("  created    \(ISO8601DateFormatter().string(from: creationDate))") }
        if let location { CLI.printLine("  location   \(location)") }
        if make != nil || model != nil {
            CLI.printLine("  device     \([make, model].compactMap { $0 }.joined(separator: " "))")
        }
        if let contentIdentifier { CLI.printLine("  content id \(contentIdentifier)") }
        for track in tracks {
            var facts = [track.codec + (track.profile.map { " (\($0))" } ?? "")]
            switch track.kind {
            case .video:
                if let w = track.width, let h = track.height { facts.append("\(w)x\(h)") }
                if let sar = track.sampleAspectRatio, sar.numerator != sar.denominator { facts.append("SAR \(sar)") }
                if let rate = track.frameRate {
                    facts.append(
                        String(format: "%.3f fps", rate.value)
                            + (track.isVariableFrameRate == true ? " (variable)" : ""))
                }
                if let format = track.pixelFormat { facts.append(format) }
                if let depth = track.bitDepth { facts.append("\(depth)-bit") }
                if let transfer = track.colorTransfer { facts.append(transfer) }
                if let hdr = ProbeReport.hdrName(track) { facts.append(hdr) }
                if track.isMirrored == true { facts.append("mirrored") }
                if let rotation = track.rotation, rotation != 0 { facts.append("rotation \(rotation)") }
            case .audio:
                if let rate = track.sampleRate { facts.append("\(rate) Hz") }
                if let layout = track.channelLayout ?? track.channels.map({ "\($0) ch" }) { facts.append(layout) }
            default: break
            }
            if let rate = track.bitRate { facts.append("\(rate / 1000) kb/s") }
            if track.isDefault { facts.append("default") }
            CLI.printLine(
                "  #\(track.index) \(track.kind.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))\(facts.joined(separator: ", "))"
            )
            for line in ProbeReport.hdrDetails(track) { CLI.printLine("             " + line) }
        }
    }

    /// `HLG`, `HDR10` (PQ with static metadata), `PQ`, `Dolby Vision 8.4 (HLG base layer)`; nil for SDR.
    static func hdrName(_ track: AssetTrack) -> String? {
        switch track.dynamicRange {
        case .hlg: return "HLG"
        case .pq: return track.hdrStaticMetadata != nil ? "HDR10" : "PQ"
        case .dolbyVision:
            guard let dolbyVision = track.dolbyVision else { return "Dolby Vision" }
            let base: String
            switch dolbyVision.baseLayer {
            case .hlg: base = "HLG base layer"
            case .pq: base = "HDR10 base layer"
            case .sdr: base = "SDR base layer"
            default: base = "no compatible base layer"
            }
            return "Dolby Vision \(dolbyVision.name) (\(base))"
        default: return nil
        }
    }

    /// The Dolby Vision record and HDR10 static metadata of a track, a line each.
    static func hdrDetails(_ track: AssetTrack) -> [String] {
        var lines: [String] = []
        if let dolbyVision = track.dolbyVision {
            lines.append(
                "Dolby Vision \(dolbyVision.versionMajor).\(dolbyVision.versionMinor), profile \(dolbyVision.profile), level \(dolbyVision.level), compatibility \(dolbyVision.compatibilityID)"
                    + (track.hasDolbyVisionRPU == true ? ", RPUs" : ""))
        }
        let source = track.hdrMetadataSource == .bitstream ? " (SEI)" : ""
        if let display = track.masteringDisplay {
            func point(_ name: String, _ x: Double?, _ y: Double?) -> String? {
                guard let x, let y else { return nil }
                return name + String(format: "(%.4f,%.4f)", x, y)
            }
            var parts = [
                point("R", display.red?.x, display.red?.y), point("G", display.green?.x, display.green?.y),
                point("B", display.blue?.x, display.blue?.y), point("WP", display.whitePoint?.x, display.whitePoint?.y),
            ].compactMap { $0 }
            if let low = display.minLuminance, let high = display.maxLuminance {
                parts.append(String(format: "%.4g-%.0f cd/m²", low, high))
            }
            lines.append("mastering display " + parts.joined(separator: " ") + source)
        }
        if let level = track.contentLightLevel {
            lines.append(
                "content light level MaxCLL \(level.maxContentLightLevel) cd/m², MaxFALL \(level.maxFrameAverageLightLevel) cd/m²"
                    + source)
        }
        return lines
    }
}
