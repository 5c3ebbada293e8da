import Foundation
import ReelExport
import TestSupport
import Testing

/// Exports `source` with a preset into a fresh folder and returns the output and the session. The
/// codecs get one thread unless `threads` says otherwise (0: as many as they choose).
func export(
    _ recipe: Fixtures.Recipe, preset: String, type: OutputType? = nil, range: TimeRange? = nil,
    metadata: MetadataPolicy = .keep, optimize: Bool = true, forceTranscode: Bool = true, threads: Int = 1
) async throws -> (url: URL, session: ExportSession) {
    let source = try await Fixtures.url(recipe)
    let asset = try await Asset.load(source)
    let session = try ExportSession(asset: asset, presetName: preset)
    let chosen = type ?? ExportPlanner.defaultType(for: session.preset)
    session.outputFileType = chosen
    session.timeRange = range
    session.metadataPolicy = metadata
    session.shouldOptimizeForNetworkUse = optimize
    // The matrix tests the encoder; smart passthrough has its own tests.
    session.forceTranscode = forceTranscode
    // The test run exports dozens of files at once on a few cores: one codec thread each, as a
    // worker gives its jobs while others wait (a codec's own thread pool, x265's above all, slows
    // down far beyond its share when every core is oversubscribed).
    session.codecThreads = threads
    let folder = Fixtures.scratchFolder(preset)
    let url = folder.appendingPathComponent("out.\(chosen.fileExtension)")
    session.outputURL = url
    try await session.export()
    #expect(session.status == .completed)
    return (url, session)
}

/// The files in a folder, hidden ones included (a failed export must leave none).
func contents(of folder: URL) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
}

/// Packet sizes and checksums of one stream, as ffmpeg's framemd5 muxer reports them (timestamps
/// left out): equal lists mean the packets were copied unchanged.
func packetHashes(_ url: URL, stream: String) async throws -> [String] {
    let result = try await Tools.run(
        "ffmpeg",
        ["-nostdin", "-v", "error", "-i", url.path, "-map", "0:\(stream)", "-c", "copy", "-f", "framemd5", "-"])
    guard result.status == 0 else { throw ToolFailure(message: result.stderr) }
    return result.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
        let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return fields.suffix(2).joined(separator: " ")
    }
}
