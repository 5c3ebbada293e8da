import Foundation
import Testing

/// The quick loop (`Scripts/test --quick`) skips every suite tagged `.process`, `.media`, `.postgres` or
/// `.browser` (TestSupport's `Tag`s): a suite that needs one of those and does not say so would make the
/// quick loop slow, or fail where the tools are missing. Read from the test sources: a suite's file
/// that starts tools, makes or decodes media, or needs PostgreSQL or Chromium tags each of its suites
/// so. (Work reached through helpers in other files is not seen; the quick loop's time shows it.)
@Suite("Test tags")
struct TestTagTests {
    /// What a file's text shows it needs, each with the words that show it.
    static var needs: [(tag: String, pattern: Regex<Substring>)] {
        [
            (
                "process",
                #/ReelBinary\.|Tools\.run\(|Tools\.ffprobe|Tools\.ffmpeg|Probe\.|SpawnedProcess\.start|runBlocking\(|StopDrill|exiftool|mediainfo/#
            ),
            (
                "media",
                #/Fixtures\.url\(|Tools\.ffmpeg|\.export\(\)|Asset\.load\(|ThumbnailReader|Transcoder|MediaProbe|AssetImageGenerator\(|PhoneFiles\./#
            ),
            ("postgres", #/PostgresServer/#),
            ("browser", #/[Cc]hromium/#),
        ]
    }

    /// The test folders whose suites run in the test run (the documentation's own checks need nothing).
    static func testFiles() -> [String] {
        let root = Repository.root.appendingPathComponent("Tests")
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        return folders.filter { $0.hasSuffix("Tests") && $0 != "DocumentationTests" }.sorted().flatMap {
            Repository.files(under: "Tests/\($0)", endingIn: ".swift")
        }
    }

    @Test func everySuiteSaysWhatItNeeds() throws {
        let files = Self.testFiles()
        #expect(files.count > 100)
        var untagged: [String] = []
        var tagged = 0
        for file in files {
            let text = try Repository.text(file)
            var needed = Self.needs.filter { text.contains($0.pattern) }.map(\.tag)
            if file.hasPrefix("Tests/ReelFleetTests/") { needed.append("postgres") }
            for suite in text.matches(of: #/@Suite(\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?/#) {
                let declared = String(suite.0)
                let missing = Set(needed).filter { !declared.contains(".\($0)") }
                if missing.isEmpty {
                    tagged += needed.isEmpty ? 0 : 1
                } else {
                    untagged.append("\(file): \(declared.prefix(60)) needs \(missing.sorted())")
                }
            }
        }
        #expect(untagged.isEmpty, "suites that do not say what they need:\n\(untagged.joined(separator: "\n"))")
        #expect(tagged > 50, "the check found the tags it checks")
    }
}
