import Foundation
import TestSupport
import Testing

/// The Swift API as the documentation says to depend on it: the Getting Started snippet's path form,
/// copied into a new package, resolves, and with `traits: []` brings none of what only a service needs.
@Suite("Depending on Reel", .timeLimit(.minutes(10)))
struct PackageTraitTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Packages only the fleet, the HTTP side or the photo library need (identities as SwiftPM prints them).
    static let serviceOnly: Set<String> = [
        "postgres-nio", "swift-nio-ssl", "swift-nio", "hummingbird", "swift-prometheus", "grdb.swift",
        "async-http-client",
    ]

    /// Every package in `app`'s resolved dependency tree, as `swift package show-dependencies` lists it.
    static func dependencies(of app: URL) async throws -> Set<String> {
        let shown = try await Tools.run(
            "swift", ["package", "--package-path", app.path, "show-dependencies", "--format", "json"])
        try #require(shown.status == 0, "the package does not resolve: \(shown.stderr)")
        let tree = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        var identities: Set<String> = []
        func visit(_ node: [String: Any]) {
            for child in node["dependencies"] as? [[String: Any]] ?? [] {
                if let identity = child["identity"] as? String { identities.insert(identity) }
                visit(child)
            }
        }
        visit(tree)
        return identities
    }

    @Test func theDocumentedDependencyResolvesWithoutTheServicesPackages() async throws {
        let article = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/ReelExport/ReelExport.docc/GettingStarted.md"),
            encoding: .utf8)
        // The snippet's lines, as a reader copies them.
        let pathLine = try #require(article.split(separator: "\n").first { $0.contains(".package(path: \"../reel\"") })
        let dependency = try #require(pathLine.firstMatch(of: #/\.package\(path: "\.\./reel", traits: \[\]\)/#))
        let targetLine = try #require(article.split(separator: "\n").first { $0.contains(".executableTarget(") })
        #expect(article.contains("branch: \"main\", traits: []"), "the URL form shows a branch, as there are no tags")

        // ../reel is this checkout, under the name the documentation gives it (a package's identity is
        // its path's last component).
        let folder = Fixtures.scratchFolder("consumer")
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("reel"), withDestinationURL: Self.root)
        let app = folder.appendingPathComponent("MyApp")
        try FileManager.default.createDirectory(
            at: app.appendingPathComponent("Sources/MyApp"), withIntermediateDirectories: true)
        let manifest = """
            // swift-tools-version:6.1
            import PackageDescription
            let package = Package(
                name: "MyApp",
                dependencies: [\(dependency.0)],
                targets: [\(targetLine.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: [","]))]
            )
            """
        try manifest.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try "import ReelExport\nprint(PresetLibrary.shipped.presets.count)\n".write(
            to: app.appendingPathComponent("Sources/MyApp/main.swift"), atomically: true, encoding: .utf8)

        let identities = try await Self.dependencies(of: app)
        #expect(identities.contains("reel") && identities.contains("swift-log"), "\(identities.sorted())")
        #expect(
            identities.isDisjoint(with: Self.serviceOnly),
            "fetched for ReelExport alone: \(identities.intersection(Self.serviceOnly).sorted())")
        // Not vacuous: with Reel's default traits the same package brings them all.
        let everything = manifest.replacingOccurrences(of: ", traits: [])", with: ")")
        try everything.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let all = try await Self.dependencies(of: app)
        #expect(all.isSuperset(of: ["postgres-nio", "swift-nio-ssl", "hummingbird", "grdb.swift"]), "\(all.sorted())")
    }
}
