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

    /// Every package in `app`'s resolved dependency tree, as `swift package show-dependencies` lists it
    /// (with `options`, e.g. the traits to build with).
    static func dependencies(of app: URL, options: [String] = []) async throws -> Set<String> {
        let shown = try await Tools.run(
            "swift", ["package", "--package-path", app.path] + options + ["show-dependencies", "--format", "json"])
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

    /// The demo's build (README, "Builds"): Scripts/demo builds `reel` with the default traits off, and
    /// this package's dependency tree without them has none of the service-only packages (so a first
    /// run neither fetches nor builds them), while with them it has all four.
    @Test func theDemoBuildsReelWithoutTheServicesPackages() async throws {
        let demo = try String(contentsOf: Self.root.appendingPathComponent("Scripts/demo"), encoding: .utf8)
        let build = try #require(demo.split(separator: "\n").first { $0.contains("swift build --product reel") })
        #expect(build.contains("--disable-default-traits"), "\(build)")

        // A copy of the manifest and its pins beside links to the sources: SwiftPM rewrites the pins of
        // a package it resolves with fewer traits, and this checkout's must stay as they are.
        let copy = Fixtures.scratchFolder("demo-build")
        for name in ["Package.swift", "Package.resolved"] {
            try FileManager.default.copyItem(
                at: Self.root.appendingPathComponent(name), to: copy.appendingPathComponent(name))
        }
        for name in ["Sources", "Tests", "Plugins", "Presets"] {
            try FileManager.default.createSymbolicLink(
                at: copy.appendingPathComponent(name), withDestinationURL: Self.root.appendingPathComponent(name))
        }
        let identities = try await Self.dependencies(of: copy, options: ["--disable-default-traits"])
        #expect(identities.contains("swift-argument-parser"), "\(identities.sorted())")
        #expect(
            identities.isDisjoint(with: Self.serviceOnly),
            "fetched for the demo's build: \(identities.intersection(Self.serviceOnly).sorted())")
        let all = try await Self.dependencies(of: copy)
        #expect(all.isSuperset(of: ["postgres-nio", "swift-nio-ssl", "hummingbird", "grdb.swift"]), "\(all.sorted())")
    }
}
