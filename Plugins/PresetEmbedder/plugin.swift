import Foundation
import PackagePlugin

/// Embeds `Presets/*.json` into the target as Swift source at build time, so the shipped presets
/// travel inside the binary while the JSON files stay the single source of truth.
@main
struct PresetEmbedder: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let presets = context.package.directoryURL.appending(path: "Presets")
        let files = try FileManager.default.contentsOfDirectory(at: presets, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "json" }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedPresets.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(files.count) presets",
                executable: try context.tool(named: "EmbedPresets").url,
                arguments: [output.path] + files.map(\.path),
                inputFiles: files,
                outputFiles: [output])
        ]
    }
}
