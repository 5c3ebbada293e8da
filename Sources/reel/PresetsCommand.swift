import ArgumentParser
import Foundation
import ReelExport

struct PresetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presets", abstract: "List the presets and what each produces.")

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the presets as JSON (every number of each).")
    var json = false

    func run() async throws {
        let library = try global.prepare()
        if json {
            CLI.printLine(String(decoding: try JSONCoding.prettyEncoder.encode(library.presets), as: UTF8.self))
            return
        }
        let width = library.presets.map(\.name.count).max() ?? 10
        for preset in library.presets {
            CLI.printLine(preset.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + preset.summary)
        }
    }
}
