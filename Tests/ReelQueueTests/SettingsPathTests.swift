import Foundation
import ReelExport
import ReelMedia
import TestSupport
import Testing

@testable import ReelQueue

/// Settings as one value (issue 32): a queued job stores the `ExportSettings` a direct export is set
/// up with, whole, and its worker sets the session up through the same `ExportSession.apply`. A field
/// added to `ExportSettings` that the spec forgets fails here, instead of working in `export` and
/// silently not in `submit`.
@Suite("Settings as one value", .tags(.media), .timeLimit(.minutes(2)))
struct SettingsPathTests {
    /// Every field away from its default (the first test holds this list to that).
    static func everyFieldSet() throws -> ExportSettings {
        var ladder = Ladder(sizes: [Ladder.Size(width: 640, height: 360)], segmentSeconds: 4)
        ladder.manifests = [.hls, .dash]
        return ExportSettings(
            preset: try PresetLibrary.shipped.preset(named: "1280x720"), outputType: .mov,
            timeRange: TimeRange(start: 0.25, end: 0.75), metadata: .forSharing, optimizeForNetwork: false,
            forceTranscode: true, allowsAudioOnly: true, fileLengthLimit: 5_000_000,
            background: RGBColor(red: 255, green: 255, blue: 255), overwrite: true, saveToLibrary: true,
            keepContentIdentifier: true, poster: true, ladder: ladder,
            quality: QualityTarget(metric: .ssim, value: 0.98), presetTarget: false)
    }

    @Test func theListSetsEveryFieldAwayFromItsDefault() throws {
        let set = Mirror(reflecting: try Self.everyFieldSet()).children
        let plain = Mirror(
            reflecting: ExportSettings(preset: try PresetLibrary.shipped.preset(named: "LowQuality"), outputType: .mp4)
        ).children
        #expect(set.count == plain.count && set.count >= 14)
        for (field, defaulted) in zip(set, plain) {
            #expect(
                "\(field.value)" != "\(defaulted.value)",
                "ExportSettings.\(field.label ?? "?") keeps its default in everyFieldSet(): give it a value there")
        }
    }

    @Test func aSpecStoresEverySettingAndGivesItBack() throws {
        let settings = try Self.everyFieldSet()
        let spec = JobSpec(settings: settings, asset: "/media/a.mov", output: "/out/a.mov")
        #expect(spec.settings(preset: settings.preset) == settings)
        // As a store keeps it (the status file's and the databases' JSON).
        let stored = try JSONDecoder().decode(JobSpec.self, from: JSONEncoder().encode(spec))
        #expect(stored.settings(preset: settings.preset) == settings)
        // Not chosen stays not chosen, so the worker's default applies.
        var unchosen = settings
        unchosen.metadata = nil
        #expect(JobSpec(settings: unchosen, asset: "/a", output: "/o").metadataChosen == false)
    }

    /// The worker's session is the direct export's: every property `apply` sets reads the same.
    @Test func aQueuedSessionIsSetUpAsADirectOne() async throws {
        let settings = try Self.everyFieldSet()
        let asset = try await Asset.load(try await Fixtures.url(Fixtures.landscape))
        let direct = try ExportSession(asset: asset, presetName: settings.preset.name)
        direct.apply(settings)
        let queued = try ExportSession(asset: asset, presetName: settings.preset.name)
        JobSpec(settings: settings, asset: asset.url.path, output: "/out/a.mov")
            .configure(queued, stallTimeout: 30, threads: 1)
        #expect(queued.outputFileType == direct.outputFileType)
        #expect(queued.timeRange == direct.timeRange)
        #expect(queued.metadataPolicy == direct.metadataPolicy)
        #expect(queued.shouldOptimizeForNetworkUse == direct.shouldOptimizeForNetworkUse)
        #expect(queued.forceTranscode == direct.forceTranscode)
        #expect(queued.allowsAudioOnly == direct.allowsAudioOnly)
        #expect(queued.fileLengthLimit == direct.fileLengthLimit)
        #expect(queued.backgroundColor == direct.backgroundColor)
        #expect(queued.overwritesExistingFile == direct.overwritesExistingFile)
        #expect(queued.writesPoster == direct.writesPoster)
        #expect(queued.ladder == direct.ladder)
        #expect(queued.qualityTarget == direct.qualityTarget)
        #expect(queued.usesPresetTarget == direct.usesPresetTarget && !queued.usesPresetTarget)
        #expect(queued.outputURL?.path == "/out/a.mov" && queued.codecThreads == 1 && queued.stallTimeout == 30)
        // And the plan a submit checks is the one the export makes.
        var planned = settings
        planned.ladder = nil
        planned.fileLengthLimit = nil
        direct.ladder = nil
        direct.fileLengthLimit = nil
        #expect(try ExportPlanner.decide(asset: asset, settings: planned) == direct.determineCompatibility())
    }
}
