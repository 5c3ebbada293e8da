import Foundation
import TestSupport
import Testing

/// `reel image library:<id> --version` and `reel library edit` / `revert` as a user runs them, on an
/// edit layout generated at test time: a blue original (heif-enc), a red rendered edit (ffmpeg) and an
/// AAE. Which picture was rendered is proved by its mean colour, measured by vips.
@Suite("Edits and versions from the command line", .tags(.process, .media), .timeLimit(.minutes(10)))
struct EditVersionTests {
    /// A 320x240 picture of one colour: HEIC by heif-enc for a `.HEIC` name, else a JPEG by ffmpeg.
    static func photo(_ colour: String, at url: URL) async throws {
        if url.pathExtension.lowercased() == "heic" {
            let png = url.deletingLastPathComponent().appendingPathComponent(".\(colour)-source.png")
            defer { try? FileManager.default.removeItem(at: png) }
            try await Tools.ffmpeg(["-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", png.path])
            let made = try await Tools.run("heif-enc", ["-q", "80", "-o", url.path, png.path])
            try #require(made.status == 0, "heif-enc: \(made.stderr)")
        } else {
            try await Tools.ffmpeg([
                "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", "-q:v", "2", "-f", "mjpeg",
                url.path,
            ])
        }
    }

    /// vips's mean of each of the red, green and blue bands of `path`.
    static func meanColour(_ path: String) async throws -> [Double] {
        var means: [Double] = []
        for band in 0..<3 {
            let extracted = path + ".band\(band).v"
            defer { try? FileManager.default.removeItem(atPath: extracted) }
            let extract = try await Tools.run("vips", ["extract_band", path, extracted, "\(band)"])
            try #require(extract.status == 0, "vips extract_band: \(extract.stderr)")
            let average = try await Tools.run("vips", ["avg", extracted])
            try #require(average.status == 0, "vips avg: \(average.stderr)")
            means.append(try #require(Double(average.stdout.trimmingCharacters(in: .whitespacesAndNewlines))))
        }
        return means
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not JSON: \(text)")
    }

    @Test("--version current renders the edit and original the original; edit, revert and change tokens")
    func versionsEditAndRevert() async throws {
        let folder = Fixtures.scratchFolder("edit-cli")
        let inputs = Fixtures.scratchFolder("edit-cli-inputs")
        let out = Fixtures.scratchFolder("edit-cli-out")
        let file = { (name: String) in folder.appendingPathComponent(name) }
        try await Self.photo("blue", at: file("IMG_0001.HEIC"))
        try await Self.photo("red", at: file("IMG_E0001.JPG"))
        let plist: [String: Any] = [
            "adjustmentFormatIdentifier": "com.apple.photo", "adjustmentFormatVersion": "1.5",
            "adjustmentBaseVersion": 0, "adjustmentData": Data("crop".utf8),
            "adjustmentEditorBundleID": "com.apple.mobileslideshow",
        ]
        try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0).write(
            to: file("IMG_0001.AAE"))
        let database = Fixtures.scratchFolder("edit-cli-db").appendingPathComponent("library.sqlite").path
        let environment = ["REEL_LIBRARY": database]
        func reel(_ arguments: [String]) async throws -> ToolResult {
            try await ReelBinary.run(arguments, environment: environment)
        }

        let scan = try await reel(["library", "scan", "--json", folder.path])
        #expect(scan.status == 0, "\(scan.stderr)")
        let report = try Self.json(scan.stdout)
        let inserted = try #require(report["insertedLocalIdentifiers"] as? [String])
        try #require(inserted.count == 1, "one asset for the three files: \(report)")
        let id = inserted[0]
        let token = try #require(report["token"] as? String)
        let shown = try Self.json(try await reel(["library", "show", "--json", id]).stdout)
        #expect(shown["hasAdjustments"] as? Bool == true)
        #expect((shown["resources"] as? [[String: Any]])?.map { $0["type"] as? Int } == [1, 5, 7], "\(shown)")

        // Versions: current is the red edit, original and unadjusted the blue photo.
        func render(_ version: String, _ name: String) async throws -> (resource: String?, colour: [Double]) {
            let path = out.appendingPathComponent(name).path
            let result = try await reel([
                "image", "library:\(id)", "--size", "max", "--version", version, "-o", path, "--json",
            ])
            try #require(result.status == 0, "\(result.stderr)")
            let line = try Self.json(String(result.stdout.split(separator: "\n").last ?? ""))
            return (line["resource"] as? String, try await Self.meanColour(path))
        }
        let current = try await render("current", "current.png")
        #expect(current.resource == "fullSizePhoto")
        #expect(current.colour[0] > 200 && current.colour[2] < 60, "the edit is red: \(current.colour)")
        for version in ["original", "unadjusted"] {
            let original = try await render(version, "\(version).png")
            #expect(original.resource == "photo")
            #expect(original.colour[2] > 200 && original.colour[0] < 60, "the original is blue: \(original.colour)")
        }
        let wrong = try await reel(["image", "library:\(id)", "--size", "max", "--version", "edited", "-o", "x.png"])
        #expect(wrong.status == 64 && wrong.stderr.contains("--version is current, unadjusted or original"))

        // write-resource of the edit's resources is byte exact.
        for (type, source) in [("fullSizePhoto", "IMG_E0001.JPG"), ("adjustmentData", "IMG_0001.AAE")] {
            let target = out.appendingPathComponent(source).path
            let written = try await reel(["library", "write-resource", id, "--type", type, "-o", target])
            #expect(written.status == 0, "\(written.stderr)")
            #expect(
                FileManager.default.contents(atPath: target) == FileManager.default.contents(atPath: file(source).path))
        }

        // An edit saved as a PhotoKit app does, then reverted.
        try await Self.photo("lime", at: inputs.appendingPathComponent("edited.jpg"))
        try Data("crop 0.1".utf8).write(to: inputs.appendingPathComponent("data.bin"))
        let edit = try await reel([
            "library", "edit", id, "--rendered", inputs.appendingPathComponent("edited.jpg").path, "--adjustment-data",
            inputs.appendingPathComponent("data.bin").path, "--format-identifier", "com.example.crop",
            "--format-version", "1.0", "--json",
        ])
        #expect(edit.status == 0, "\(edit.stderr)")
        #expect(try Self.json(edit.stdout)["hasAdjustments"] as? Bool == true)
        let changes = try Self.json(try await reel(["library", "changes", "--since", token, "--json"]).stdout)
        #expect(changes["updated"] as? [String] == [id], "\(changes)")
        let lime = try await render("current", "lime.png")
        #expect(lime.colour[1] > 200 && lime.colour[0] < 60 && lime.colour[2] < 60, "the new edit: \(lime.colour)")
        let aae = try #require(
            try PropertyListSerialization.propertyList(from: Data(contentsOf: file("IMG_0001.AAE")), format: nil)
                as? [String: Any])
        #expect(aae["adjustmentFormatIdentifier"] as? String == "com.example.crop")
        #expect(aae["adjustmentData"] as? Data == Data("crop 0.1".utf8))

        let afterEdit = try #require(try Self.json(edit.stdout)["localIdentifier"] as? String)
        #expect(afterEdit == id)
        let revert = try await reel(["library", "revert", id, "--json"])
        #expect(revert.status == 0, "\(revert.stderr)")
        #expect(try Self.json(revert.stdout)["hasAdjustments"] as? Bool == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["IMG_0001.HEIC"])
        let reverted = try await render("current", "reverted.png")
        #expect(reverted.resource == "photo" && reverted.colour[2] > 200, "back to blue: \(reverted.colour)")

        // A rendered file that is not a JPEG or HEIC: one line, nothing written.
        try Data("hello".utf8).write(to: inputs.appendingPathComponent("notes.jpg"))
        let refused = try await reel([
            "library", "edit", id, "--rendered", inputs.appendingPathComponent("notes.jpg").path, "--adjustment-data",
            inputs.appendingPathComponent("data.bin").path, "--format-identifier", "x", "--format-version", "1",
        ])
        #expect(refused.status != 0 && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("notes.jpg"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["IMG_0001.HEIC"])
    }
}
