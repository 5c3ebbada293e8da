import Foundation
import Testing

/// The repository's files, read as text: the tests of this target compare what the documentation
/// says, and what the sources spell out, with the types themselves.
enum Repository {
    /// The checkout's root folder (this file is `Tests/DocumentationTests/Repository.swift`).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The paths (relative to the root) of the files below `folder` whose names end in `suffix`, sorted.
    static func files(under folder: String, endingIn suffix: String) -> [String] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(suffix) }.map { "\(folder)/\($0)" }.sorted()
    }

    /// The folders below `folder` (relative to the root, `folder` itself left out), sorted.
    static func folders(under folder: String) -> [String] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        let below = walker.compactMap { $0 as? String }.filter { name in
            var isFolder: ObjCBool = false
            let path = base.appendingPathComponent(name).path
            return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
        }
        return below.map { "\(folder)/\($0)" }.sorted()
    }

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// README, the contributors' guide, the changelog and every DocC article: the documents people read.
    static var documents: [String] {
        ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"] + files(under: "Sources", endingIn: ".md")
    }
}

/// A block of a document that a test writes: between `<!-- generated: NAME … -->` and
/// `<!-- end generated -->`. `REEL_WRITE_DOCS=1 Scripts/test --filter DocumentationTests` rewrites
/// every such block from the types; without it, a block that differs fails the test. A block may
/// stand in several documents; each is checked.
struct GeneratedBlock {
    let name: String

    /// Checks (or, with `REEL_WRITE_DOCS=1`, writes) the block in every document that holds it; at
    /// least one must.
    func check(_ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let start = "<!-- generated: \(name) "
        let end = "<!-- end generated -->"
        var found: [String] = []
        for path in Repository.documents {
            let text = try Repository.text(path)
            guard let opening = text.range(of: start) else { continue }
            found.append(path)
            guard let bodyStart = text[opening.upperBound...].firstIndex(of: "\n").map({ text.index(after: $0) }),
                let closing = text.range(of: end, range: bodyStart..<text.endIndex)
            else {
                Issue.record("\(path): the block '\(name)' has no '\(end)'", sourceLocation: sourceLocation)
                continue
            }
            let current = String(text[bodyStart..<closing.lowerBound])
            if current == expected { continue }
            if ProcessInfo.processInfo.environment["REEL_WRITE_DOCS"] == "1" {
                try text.replacingCharacters(in: bodyStart..<closing.lowerBound, with: expected)
                    .write(to: Repository.root.appendingPathComponent(path), atomically: true, encoding: .utf8)
            } else {
                Issue.record(
                    """
                    \(path): the block '\(name)' differs from the types (REEL_WRITE_DOCS=1 rewrites it); it should read:
                    \(expected)
                    """, sourceLocation: sourceLocation)
            }
        }
        #expect(!found.isEmpty, "no document holds the block '\(name)'", sourceLocation: sourceLocation)
    }
}
