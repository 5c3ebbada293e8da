import ArgumentParser
import Foundation
import ReelExport

/// The options of one export, shared by `reel export` and `reel submit`: an `ExportRequest`, whose
/// keys are these options' names in camelCase (what a manifest line says). Declared once here, checked
/// once by `ExportRequest`, so an option means the same in all three.
struct ExportOptions: ParsableArguments {
    /// The help section these options appear under, in every command that has them.
    static let title = "Export options"

    @Option(name: .long, help: "Preset name, e.g. 1280x720, MediumQuality, Passthrough (see `reel presets`).")
    var preset: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Output type: mp4, mov, m4v, m4a, hls (a folder of CMAF segments and playlists; needs --ladder or a ladder preset), dash (the same with a DASH MPD alone; --manifests hls,dash adds the playlists), or an Apple type identifier. Default: from -o's extension, else mp4 (m4a for audio presets).",
            valueName: "type"))
    var type: String?

    @Option(
        name: .shortAndLong,
        help: ArgumentHelp(
            "Output file (one asset). Default: <asset name>.<preset>.<type> in the current folder (submit: with the job id before the type, in --output-dir).",
            valueName: "file"))
    var output: String?

    @Flag(name: .long, help: "Keep -o's extension even though it is not the --type's (needs --type).")
    var forceExtension = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Export only part of the asset: start-end in seconds or [hh:]mm:ss; an end past the asset is clamped to it.",
            valueName: "start-end"))
    var timeRange: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Source metadata to write: keep (all of it, as AVFoundation does), sharing (no location, device or identifier keys), strip (none). Default: $REEL_METADATA, else keep; a queued job without either takes its worker's default.",
            valueName: "policy"))
    var metadata: String?

    @Flag(name: .long, help: "Do not move the moov atom to the front (faster finish, no progressive playback).")
    var noNetworkOptimization = false

    @Flag(name: .long, help: "Re-encode even when the source already satisfies the preset (no smart passthrough).")
    var forceTranscode = false

    @Flag(
        name: .long,
        help:
            "Under a video preset, export an asset without video as its audio alone (otherwise it fails with no-video)."
    )
    var allowAudioOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Make the file fit this size (16MB, 8MiB, 500KB; MB = 1,000,000 bytes): the rate, and if need be the picture size, is chosen to fit; the whole duration is kept.",
            valueName: "size"))
    var maxSize: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep this picture quality with the fewest bytes: ssim:0.985 or psnr:42 (none: the preset's CRF, without the target the AV1 presets carry). Samples of the export are encoded at a few CRFs and measured against the scaled source; the video is encoded once at the CRF that meets the target (never below CRF 10, always under the preset's bit-rate cap), and the result measures the whole output. --estimate shows the CRF chosen and the size predicted. With a ladder, per title: each rung's CRF is searched, and a rung that adds no quality over the one below it scaled up (within 0.002 SSIM) is left out.",
            valueName: "metric:value"))
    var quality: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Colour transparent pixels of an animated GIF or APNG become: #rrggbb, black (default) or white.",
            valueName: "colour"))
    var background: String?

    @Flag(name: .long, help: "Replace the output file if it exists (for a queued job: when it runs).")
    var overwrite = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "For a library:<id> asset, the resource to export: pairedVideo, video, … (default: a Live or Motion Photo's motion, else the asset's own).",
            valueName: "type"))
    var resource: String?

    @Flag(
        name: .long,
        help:
            "Save the finished output to the library as a new asset (creation date and location from a library source); the export completes only once it is there."
    )
    var saveToLibrary = false

    @Flag(
        name: .long,
        help: "With --save-to-library: keep a Live Photo's content identifier in the saved copy (removed otherwise).")
    var keepContentIdentifier = false

    @Flag(
        name: .long,
        help:
            "Also write a poster JPEG beside the video (<output name>.jpg): its frame at 10 % of the export, from the same decode, published with it."
    )
    var poster = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "An hls ladder (implies --type hls): the rungs, largest first, e.g. 1920x1080,1280x720,960x540,640x360 (each fitted to the source's aspect; a rung above the source's size is dropped), or a ladder preset (HLSLadder1080, HLSLadderHDR1080; also as --preset). H.264 rungs are SDR; under an HEVC preset (HLSLadderHDR1080, --preset HEVC1920x1080) a 10-bit HLG or PQ source keeps its HDR, with tone-mapped H.264 SDR rungs in the same boxes beside the HDR ones. -o names the folder.",
            valueName: "WxH,…|preset"))
    var ladder: String?

    @Option(
        name: .long,
        help: ArgumentHelp("With --ladder: seconds per segment (default 6).", valueName: "seconds"))
    var segmentDuration: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --ladder: the manifests over the one set of segments: hls (default; dash with --type dash), dash, or hls,dash.",
            valueName: "formats"))
    var manifests: String?

    @Flag(
        name: .long,
        help:
            "With a ladder keeping HDR: write only the HDR rungs, without the tone-mapped H.264 SDR rungs beside them (Apple's HLS rules ask for both)."
    )
    var noSdrRungs = false

    /// The options as a request (a flag not given is nil, as a manifest line without the key).
    var request: ExportRequest {
        ExportRequest(
            preset: preset, type: type, output: output, forceExtension: forceExtension ? true : nil,
            timeRange: timeRange, metadata: metadata, noNetworkOptimization: noNetworkOptimization ? true : nil,
            forceTranscode: forceTranscode ? true : nil, allowAudioOnly: allowAudioOnly ? true : nil,
            maxSize: maxSize, background: background, overwrite: overwrite ? true : nil, resource: resource,
            saveToLibrary: saveToLibrary ? true : nil, keepContentIdentifier: keepContentIdentifier ? true : nil,
            poster: poster ? true : nil, ladder: ladder, segmentDuration: segmentDuration,
            manifests: manifests, noSdrRungs: noSdrRungs ? true : nil, quality: quality)
    }

    /// `ExportRequest.check()`: what can be checked before the presets are loaded, in its words.
    func validate() throws {
        do {
            try request.check()
        } catch {
            throw ValidationError(error.message)
        }
    }
}

/// `--metadata` for `reel work`, and `$REEL_METADATA` for every command: a service's default policy.
enum MetadataDefault {
    /// `$REEL_METADATA`, nil when unset; an unknown policy is an argument error.
    static func fromEnvironment() throws -> MetadataPolicy? {
        do {
            return try MetadataPolicy.serviceDefault(in: ProcessInfo.processInfo.environment)
        } catch {
            throw CLIFailure(message: error.message, exitStatus: .usage)
        }
    }
}
