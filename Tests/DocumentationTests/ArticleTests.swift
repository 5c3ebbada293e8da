import ArgumentParser
import Foundation
import ReelExport
import ReelImage
import ReelLibrary
import ReelMedia
import ReelQueue
import Testing

@testable import reel

/// README and the DocC articles name only what exists: every `--option` is one of `reel`'s (or of the
/// tool named beside it in `otherTools`), every code-like word in backticks is a word of Reel's types,
/// and the architecture article names every folder of `Sources` and none that is not there.
@Suite(.timeLimit(.minutes(1)))
struct ArticleTests {
    /// Every option of every `reel` command, from the commands' own help.
    static let reelOptions: Set<String> = {
        var options: Set<String> = []
        func visit(_ command: any ParsableCommand.Type) {
            let help = Reel.helpMessage(for: command, includeHidden: true, columns: 10_000)
            for match in help.matches(of: #/--[a-z][a-z0-9-]*/#) { options.insert(String(match.0)) }
            for sub in command.configuration.subcommands { visit(sub) }
        }
        visit(Reel.self)
        return options
    }()

    /// Options the documents give to other programs, each with the program it belongs to.
    static let otherTools: [String: String] = [
        "--filter": "swift test (Scripts/test)", "--debug": "Scripts/package", "--chroot": "Scripts/package-test",
        "--static-swift-stdlib": "swift build", "--minutes": "Scripts/fuzz", "--fit": "Scripts/estimate-calibration",
        "--reestimate": "Scripts/estimate-calibration", "--out": "Scripts/docs", "--from-test-build": "Scripts/package",
        "--workers": "reel-bench-claims", "--seconds": "reel-bench-claims", "--strict": "swift format lint",
        "--explicit-target-dependency-import-check": "swift build", "--now": "systemctl enable",
        "--hdr": "Scripts/deltae.py", "--seed": "Scripts/fuzz and Scripts/chaos",
        "--product": "swift build", "--oneline": "git log", "--disable-default-traits": "swift build",
        "--traits": "swift build", "--quick": "Scripts/test", "--commands": "Scripts/fuzz",
        "--tiers": "Scripts/bench-library", "--photos": "Scripts/bench-library",
    ]

    /// Backticked words that look like codes (`a-b`) but are not Reel's: packages, tools, thread names.
    static let otherWords: Set<String> = [
        "postgresql-15", "pkg-config", "libgcc-s1", "dpkg-dev", "apt-cache", "dpkg-shlibdeps", "reel-bench-claims",
        "reel-pipeline",
        "swift-log", "swift-metrics", "swift-service-lifecycle", "postgres-nio", "swift-nio-ssl", "swift-nio",
        "swift-prometheus", "swift-argument-parser", "swift-docc-plugin", "reel-paths", "opencv-doc",
    ]

    /// Whether `word` is one of the words Reel's types write: an error code, a method, an obstacle, a
    /// colour handling, a dynamic range, a phase, a state, a metadata policy, a stream action, a photo
    /// request's delivery mode or pixels' source, or a library's or queue's failure code.
    static func isReelWord(_ word: String) -> Bool {
        JobError.Code.allCases.contains { $0.rawValue == word } || ExportMethod(rawValue: word) != nil
            || PassthroughObstacle(rawValue: word) != nil || ExportPlan.ColorHandling(rawValue: word) != nil
            || DynamicRange(rawValue: word) != nil || ExportSession.Phase(rawValue: word) != nil
            || JobState(rawValue: word) != nil || MetadataPolicy(rawValue: word) != nil
            || ExportPlan.StreamAction(rawValue: word) != nil || ImageCommand.Delivery(rawValue: word) != nil
            || LibraryError.Code.allCases.contains { $0.description == word || $0.commandCode == word }
            || QueueError.Kind.allCases.contains { $0.code == word } || PhotoSource(rawValue: word) != nil
    }

    @Test(arguments: Repository.documents)
    func everyOptionNamedIsAnOptionOfReel(_ document: String) throws {
        let text = try Repository.text(document)
        // An option starts a word (Swift's regular expressions have no lookbehind: the character before
        // it is matched, and left out).
        let unknown = Set(text.matches(of: #/(?:^|[^\w-])(--[a-z][a-z0-9-]*)/#).map { String($0.1) })
            .subtracting(Self.reelOptions).subtracting(Self.otherTools.keys)
        #expect(unknown.isEmpty, "\(document) names options reel does not have: \(unknown.sorted())")
    }

    @Test(arguments: Repository.documents)
    func everyCodeNamedIsAWordOfReelsTypes(_ document: String) throws {
        let text = try Repository.text(document)
        let words = Set(text.matches(of: #/`([a-z0-9]+(?:-[a-z0-9]+)+)`/#).map { String($0.1) })
        let unknown = words.filter { !Self.isReelWord($0) && !Self.otherWords.contains($0) }
        #expect(unknown.isEmpty, "\(document) names codes no type of Reel's has: \(unknown.sorted())")
    }

    /// The check above is not empty-handed: the options and codes it knows include those README uses.
    @Test func theChecksKnowWhatTheyCheck() {
        #expect(Self.reelOptions.isSuperset(of: ["--preset", "--json", "--max-size", "--store", "--lease"]))
        #expect(!Self.reelOptions.contains("--bench-claims") && Self.isReelWord("worker-crashed"))
        #expect(Self.isReelWord("smart-passthrough") && Self.isReelWord("tone-mapped"))
        #expect(!Self.isReelWord("output-exist"))
    }

    /// README's "Where to read on" lists every article (the catalogs' landing pages aside), and every
    /// article and path README names is there.
    @Test func theReadmeNamesTheArticlesAndPathsThatExist() throws {
        let readme = try Repository.text("README.md")
        let articles = Repository.files(under: "Sources", endingIn: ".md").filter { $0.contains(".docc/") }
        let articleNames = Set(articles.map { ($0 as NSString).lastPathComponent })
        let rootDocuments: Set<String> = ["CONTRIBUTING.md", "CHANGELOG.md"]
        let named = Set(readme.matches(of: #/`([A-Za-z]+\.md)`/#).map { String($0.1) }).subtracting(rootDocuments)
        #expect(rootDocuments.allSatisfy { readme.contains("`\($0)`") }, "README points to the guide and the changelog")
        #expect(
            named.subtracting(articleNames).isEmpty,
            "README names articles that are not there: \(named.subtracting(articleNames).sorted())")
        let landingPages: Set<String> = ["ReelExport.md", "ReelQueue.md", "ReelLibrary.md"]
        let unlisted = articleNames.subtracting(named).subtracting(landingPages)
        #expect(unlisted.isEmpty, "README does not list these articles: \(unlisted.sorted())")
        // The two commands a fresh machine starts with, each at the start of a line of a shell block.
        let commands = Set(readme.matches(of: #/(?m)^(Scripts/[a-z-]+) /#).map { String($0.1) })
        #expect(commands.isSuperset(of: ["Scripts/demo", "Scripts/test"]))
        #expect(readme.contains("\n## Stopping Reel\n"))
        let paths = Set(
            readme.matches(of: #/`((?:Scripts|Sources|Tests|Presets|Packaging)/[^` ]*)/#).map { String($0.1) })
        let missing = paths.union(commands).filter {
            !FileManager.default.fileExists(atPath: Repository.root.appendingPathComponent($0).path)
        }
        #expect(missing.isEmpty, "README names paths that are not there: \(missing.sorted())")
    }

    @Test func theArchitectureArticleNamesTheFoldersAsTheyAre() throws {
        let article = "Sources/ReelExport/ReelExport.docc/Architecture.md"
        let text = try Repository.text(article)
        let named = Set(text.matches(of: #/`((?:Sources|Tests|Plugins)/[A-Za-z0-9_/+.-]+?)/?`/#).map { String($0.1) })
        let missing = named.filter { path in
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(
                atPath: Repository.root.appendingPathComponent(path).path, isDirectory: &isFolder)
            return !(exists && isFolder.boolValue)
        }
        #expect(missing.isEmpty, "\(article) names folders that are not there: \(missing.sorted())")
        let folders = Repository.folders(under: "Sources").filter { !$0.contains(".docc") }
        let unnamed = Set(folders).subtracting(named)
        #expect(unnamed.isEmpty, "\(article) does not say what these folders hold: \(unnamed.sorted())")
        #expect(named.count > 30)
    }
}
