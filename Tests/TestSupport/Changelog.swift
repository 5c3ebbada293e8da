import Foundation

/// CHANGELOG.md, whose first numbered heading is the version every build reports.
public enum Changelog {
    /// The version of the first `## <major>.<minor>.<patch>` heading.
    public static func version() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../CHANGELOG.md").standardizedFileURL
        let text = try String(contentsOf: url, encoding: .utf8)
        for line in text.split(separator: "\n") where line.hasPrefix("## ") {
            if let match = line.firstMatch(of: #/^## ([0-9]+\.[0-9]+\.[0-9]+)/#) { return String(match.1) }
        }
        throw NoVersion()
    }

    struct NoVersion: Error, CustomStringConvertible {
        var description: String { "CHANGELOG.md has no '## <major>.<minor>.<patch>' heading" }
    }
}
