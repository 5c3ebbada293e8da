import ArgumentParser
import Foundation
import ReelExport

struct PresetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presets", abstract: "List the presets and what each produces.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var presetOptions: PresetOptions

    @Flag(name: .long, help: "Print the presets as JSON (every number of each).")
    var json = false

    func run() async throws {
        let library = try presetOptions.prepare(global)
        if json {
            CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(library.presets), as: UTF8.self))
            return
        }
        // Each preset answers to its name, its aliases and its Apple name (AVAssetExportPreset…).
        let names = library.presets.map { preset in
            preset.name
                + ((preset.aliases ?? []).isEmpty ? "" : " (" + (preset.aliases ?? []).joined(separator: ", ") + ")")
        }
        let width = names.map(\.count).max() ?? 10
        for (name, preset) in zip(names, library.presets) {
            CLI.printLine(name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + preset.summary)
        }
    }
}
