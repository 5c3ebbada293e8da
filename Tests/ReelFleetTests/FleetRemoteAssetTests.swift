import Foundation
import TestSupport
import Testing

/// A fleet job whose asset is a presigned URL: submitted from a manifest line, downloaded by a worker
/// under its own policy from a private nginx, with the signature kept in the database's `spec` column
/// for the workers and out of every status file and printed status.
@Suite("Remote assets in a fleet", .tags(.process, .media, .postgres), .timeLimit(.minutes(5)))
struct FleetRemoteAssetTests {
    @Test func aManifestsURLIsDownloadedByAWorkerAndItsSignatureStaysInTheDatabase() async throws {
        let fleet = try await FleetProcessTests.Fleet.make()
        let server = try await NginxServer.shared()
        let clip = try Data(contentsOf: try await Fixtures.url(Fixtures.landscape))
        try server.publish(clip, as: "fleet/clip.mp4")
        let digest = String(
            try await Tools.run("sha256sum", [try await Fixtures.url(Fixtures.landscape).path]).stdout.prefix(64))
        let secret = "X-Amz-Signature=fleetSECRET42"
        let line: [String: Any] = [
            "asset": "\(server.base)/fleet/clip.mp4?\(secret)", "preset": "640x480",
            "outputDir": fleet.outputs.path, "networkAccessAllowed": true, "sha256": digest,
        ]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: line), as: UTF8.self)
        let submitted = try await ReelBinary.run(
            ["submit", "--manifest", "-", "--json"], environment: fleet.environment, input: Data((text + "\n").utf8))
        try #require(submitted.status == 0, "\(submitted.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(submitted.stdout.utf8)) as? [String: Any]
        let id = try #require(object?["id"] as? String, "\(submitted.stdout)")

        let worker = try fleet.worker(
            [
                "--drain", "--allow-http", "--allow-private-address", "127.0.0.1:\(server.port)", "--download-cache",
                Fixtures.scratchFolder("fleet-downloads").path,
            ])
        let ended = try await worker.exit(within: .seconds(120))
        #expect(ended.status == 0, "\(worker.output.suffix(2000))")
        let status = try #require(try await fleet.status(id))
        #expect(status.state == .completed, "\(String(describing: status.error))")
        #expect(status.asset == "\(server.base)/fleet/clip.mp4")

        // The workers read the signature from the database; nobody who polls sees it.
        #expect(try await fleet.sql("SELECT spec->'remote'->>'query' FROM reel_jobs WHERE id = '\(id)'") == secret)
        let files = try FileManager.default.contentsOfDirectory(atPath: fleet.statusFolder.path)
        #expect(!files.isEmpty)
        for name in files {
            let text = try String(contentsOfFile: fleet.statusFolder.path + "/" + name, encoding: .utf8)
            #expect(!text.contains("SECRET"), "\(name)")
        }
        let shown = try await ReelBinary.run(["status", id, "--json"], environment: fleet.environment)
        #expect(!shown.stdout.contains("SECRET") && !submitted.stdout.contains("SECRET"))
        #expect(!worker.output.contains("SECRET"), "the worker's log showed the signature")
    }
}
