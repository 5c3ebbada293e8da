import Foundation
import TestSupport
import Testing

/// The Swift API as the documentation says to depend on it: the Getting Started snippet's path form,
/// copied into a new package, resolves, and with `traits: []` brings none of what only a service needs.
@Suite("Depending on Reel", .tags(.process), .timeLimit(.minutes(10)))
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
        Set(try await resolved(app, options: options).keys)
    }

    /// Every package in `app`'s resolved dependency tree with its version (`direct` only: the packages
    /// its manifest names).
    static func resolved(_ app: URL, options: [String] = [], direct: Bool = false) async throws -> [String: String] {
        let shown = try await Tools.run(
            "swift", ["package", "--package-path", app.path] + options + ["show-dependencies", "--format", "json"])
        try #require(shown.status == 0, "the package does not resolve: \(shown.stderr)")
        let tree = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
        var versions: [String: String] = [:]
        func visit(_ node: [String: Any]) {
            for child in node["dependencies"] as? [[String: Any]] ?? [] {
                if let identity = child["identity"] as? String {
                    versions[identity] = child["version"] as? String ?? ""
                }
                if !direct { visit(child) }
            }
        }
        visit(tree)
        return versions
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
        #expect(
            all.isSuperset(of: ["postgres-nio", "swift-nio-ssl", "hummingbird", "grdb.swift", "async-http-client"]),
            "\(all.sorted())")
    }

    /// The demo's build (README, "Builds"): Scripts/demo builds `reel` with the default traits off, and
    /// this package's dependency tree without them has none of the service-only packages (so a first
    /// run neither fetches nor builds them), while with them it has all four.
    @Test func theDemoBuildsReelWithoutTheServicesPackages() async throws {
        let demo = try String(contentsOf: Self.root.appendingPathComponent("Scripts/demo"), encoding: .utf8)
        let build = try #require(demo.split(separator: "\n").first { $0.contains("swift build --product reel") })
        #expect(build.contains("--disable-default-traits"), "\(build)")

        let copy = try Self.manifestCopy("demo-build")
        let identities = try await Self.dependencies(of: copy, options: ["--disable-default-traits"])
        #expect(identities.contains("swift-argument-parser"), "\(identities.sorted())")
        #expect(
            identities.isDisjoint(with: Self.serviceOnly),
            "fetched for the demo's build: \(identities.intersection(Self.serviceOnly).sorted())")
        let all = try await Self.dependencies(of: copy)
        #expect(
            all.isSuperset(of: ["postgres-nio", "swift-nio-ssl", "hummingbird", "grdb.swift", "async-http-client"]),
            "\(all.sorted())")
        // Pins that travel: the manifest alone (no Package.resolved, as a fresh clone has) resolves every
        // package it names to exactly the version it pins.
        let direct = try await Self.resolved(copy, direct: true)
        let pins = try Self.exactPins()
        #expect(
            direct == pins, "resolved \(direct.sorted { $0.key < $1.key }) against \(pins.sorted { $0.key < $1.key })")
    }

    /// Photos (ReelImage over libvips and libheif, C libraries no package resolve can show) sit behind
    /// the Photos trait, on by default: `reel` depends on ReelImage only with it, no library an app
    /// links (ReelExport, ReelQueue, ReelLibrary) depends on it, and the demo's setup list installs
    /// no libvips or libheif while the full one installs them and their tools.
    @Test func photosAreBehindTheirTraitAndOutOfTheDemo() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(".trait(name: \"Photos\""))
        let defaults = try #require(manifest.split(separator: "\n").first { $0.contains(".default(enabledTraits:") })
        #expect(defaults.contains("\"Photos\""), "\(defaults)")
        // Every line that names ReelImage: its product, its own target, its test target, DocumentationTests'
        // dependencies (a test target: it checks the documents' words against PhotoSource's), and `reel`'s
        // dependency on it, which carries the trait.
        let naming = manifest.split(separator: "\n").filter { $0.contains("\"ReelImage\"") }
        let allowed = naming.filter {
            $0.contains(".library(name: \"ReelImage\"") || $0.contains(".target(name: \"ReelImage\", dependencies:")
                || $0.contains(".testTarget(name: \"ReelImageTests\"")
                || $0.contains(".target(name: \"ReelImage\", condition: .when(traits: [\"Photos\"]))")
                || $0.contains("\"reel\", \"ReelExport\", \"ReelQueue\", \"ReelMedia\", \"ReelLibrary\", \"ReelImage\"")
        }
        #expect(naming.count == allowed.count && naming.count == 5, "\(naming)")
        #expect(manifest.contains("pkgConfig: \"vips\""))

        let setup = try String(contentsOf: Self.root.appendingPathComponent("Scripts/setup"), encoding: .utf8)
        let demoPart = try #require(setup.components(separatedBy: "if [ \"${REEL_SETUP:-}\" != demo ]").first)
        #expect(!demoPart.contains("libvips") && !demoPart.contains("libheif"), "\(demoPart)")
        for package in ["libvips-dev", "libheif-dev", "libvips-tools", "libheif-examples"] {
            #expect(setup.contains(package), "Scripts/setup does not install \(package)")
        }
    }

    /// The `exact:` version of every package `Package.swift` names, by identity; a line without one is
    /// an issue.
    static func exactPins() throws -> [String: String] {
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var pins: [String: String] = [:]
        for line in manifest.split(separator: "\n") where line.contains(".package(") {
            guard let match = line.firstMatch(of: #/\.package\(url: "[^"]*/([^/"]+)", exact: "([0-9.]+)"\)/#) else {
                Issue.record("not pinned with exact: \(line)")
                continue
            }
            pins[String(match.1).lowercased()] = String(match.2)
        }
        return pins
    }

    /// A copy of the manifest, without pins, beside links to the sources: what a fresh clone resolves
    /// (Package.resolved is not committed), and SwiftPM may write pins there without touching this
    /// checkout's.
    static func manifestCopy(_ label: String) throws -> URL {
        let copy = Fixtures.scratchFolder(label)
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("Package.swift"), to: copy.appendingPathComponent("Package.swift"))
        for name in ["Sources", "Tests", "Plugins", "Presets"] {
            try FileManager.default.createSymbolicLink(
                at: copy.appendingPathComponent(name), withDestinationURL: root.appendingPathComponent(name))
        }
        return copy
    }

    /// Pins that travel: no Package.resolved in git (this machine's package mirror has commit ids of its
    /// own) and every dependency named with `exact:`; the demo-build test above resolves the manifest
    /// alone and finds exactly those versions.
    @Test func everyDependencyIsPinnedExactlyAndNoPinsAreCommitted() async throws {
        #expect(try Self.exactPins().count >= 10)
        let ignored = try await Tools.run("git", ["-C", Self.root.path, "check-ignore", "-q", "Package.resolved"])
        #expect(ignored.status == 0, "Package.resolved is not ignored")
        let tracked = try await Tools.run("git", ["-C", Self.root.path, "ls-files", "Package.resolved"])
        #expect(tracked.stdout.isEmpty, "Package.resolved is tracked")
    }
}
