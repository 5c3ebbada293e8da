// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Reel",
    products: [
        .executable(name: "reel", targets: ["reel"]),
        .library(name: "ReelExport", targets: ["ReelExport"]),
        .library(name: "ReelQueue", targets: ["ReelQueue"]),
        // The photo library in PhotoKit's words (its own GRDB dependency): `PhotoLibrary`.
        .library(name: "ReelLibrary", targets: ["ReelLibrary"]),
        // Photos through libvips and libheif (HEIC, AVIF, JPEG, PNG, WebP, GIF): `PhotoRenderer`.
        .library(name: "ReelImage", targets: ["ReelImage"]),
    ],
    // What only a service needs sits behind traits, all on by default (building Reel itself builds
    // everything). An app that wants the libraries alone depends on the package with `traits: []`:
    // SwiftPM then neither fetches nor builds the database driver, NIO's SSL stack, the HTTP server or
    // SQLite (checked by PackageTraitTests).
    traits: [
        .trait(name: "Fleet", description: "The PostgreSQL store (ReelFleet): postgres-nio and swift-nio-ssl."),
        .trait(name: "Server", description: "The worker's HTTP side (ReelServer): Hummingbird, swift-prometheus."),
        .trait(name: "PhotoLibrary", description: "The photo library's index (ReelLibrary): GRDB and SQLite."),
        .trait(name: "Photos", description: "Photos in `reel` (ReelImage): libvips and libheif, C libraries."),
        .trait(name: "Remote", description: "Assets named by an http(s) URL (ReelRemote): async-http-client."),
        .default(enabledTraits: ["Fleet", "Server", "PhotoLibrary", "Photos", "Remote"]),
    ],
    // Every dependency is pinned with `exact:` (PinTests checks it against the resolved graph): the
    // reproducibility a committed Package.resolved would give, without commit ids that exist only in
    // one machine's package mirror. Package.resolved stays out of git.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        // Metrics through swift-metrics' API (no backend) and the worker as a swift-service-lifecycle Service.
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        // The worker's HTTP side (ReelServer): Prometheus text, health, the status page.
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        // `swift package generate-documentation` (Scripts/docs): DocC for ReelExport, ReelQueue and ReelLibrary.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
        // The photo library's embedded store (ReelLibrary only): SQLite through GRDB, WAL, migrations.
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        // Remote assets (ReelRemote only): HEAD, ranged GETs and uploads over HTTP/1.1 and TLS.
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    ],
    targets: [
        // FFmpeg 5.1's libraries and headers, as Debian 12 ships them; the module map links every library.
        // Linux only (the queue uses inotify and /proc, the shim glibc), so no Apple platform is named.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [
                .apt([
                    "libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev",
                    "libswresample-dev", "pkg-config",
                ])
            ]
        ),
        // Bridges for what Swift cannot import from FFmpeg (macros, the variadic log callback) and two
        // glibc calls; a C target so the log sink's state has one definition (shim.c).
        .target(name: "CFFmpegShim", dependencies: ["CFFmpeg"]),
        // libvips 8.14 with libheif 1.15, as Debian 12 ships them (libvips-dev, libheif-dev). Only
        // CVipsShim includes its header: Swift sees plain C functions, never GObject or variadic calls.
        .systemLibrary(
            name: "CVips", pkgConfig: "vips", providers: [.apt(["libvips-dev", "libheif-dev", "pkg-config"])]),
        // libheif is linked for the shim's own calls (vips's pkg-config names only libvips and GLib).
        .target(name: "CVipsShim", dependencies: ["CVips"], linkerSettings: [.linkedLibrary("heif")]),
        // Photos: the only module that imports CVipsShim, as ReelMedia is FFmpeg's. Behind the Photos
        // trait in `reel`; an app that only exports never links libvips. A HEIF's item locations are
        // checked with ReelBoxes before libheif reads them.
        .target(name: "ReelImage", dependencies: ["CVipsShim", "ReelBoxes", "ReelSystem"]),
        // ISO-BMFF boxes (MP4, QuickTime, HEIC): the package's one bounds-checked reader and writer, no
        // dependencies. ReelMedia's MP4 surgery, ReelExport's layout check and the photo library read with it.
        .target(name: "ReelBoxes"),
        // The only module that imports CFFmpeg and CFFmpegShim: owners for FFmpeg objects and the
        // transcode and remux pipelines.
        .target(
            name: "ReelMedia",
            dependencies: [
                "CFFmpeg", "CFFmpegShim", "ReelBoxes", "ReelSystem", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Asset, Preset, OutputType and ExportSession: what an app developer sees.
        .target(
            name: "ReelExport",
            dependencies: ["ReelMedia", "ReelBoxes", "ReelSystem", .product(name: "Logging", package: "swift-log")],
            plugins: ["PresetEmbedder"]
        ),
        // Jobs, the spool-directory store, status files and the worker pool.
        .target(
            name: "ReelQueue",
            dependencies: [
                "ReelMedia", "ReelExport", "ReelSystem", "CReelSystem", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The fleet's store: jobs in PostgreSQL (postgres-nio), for many machines on one queue. A target of
        // its own, so an app that only exports never links NIO or a database driver.
        .target(
            name: "ReelFleet",
            dependencies: [
                "ReelQueue", "ReelExport",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Fleet"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A worker's HTTP side: Prometheus metrics, health, readiness and the status page (Hummingbird,
        // swift-prometheus). A target of its own, so an app that only exports or queues never links NIO.
        .target(
            name: "ReelServer",
            dependencies: [
                "ReelQueue", "ReelExport",
                .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["Server"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Server"])),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .when(traits: ["Server"])),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The photo library: PhotoKit's model over folders of phone media, indexed in SQLite (GRDB, kept
        // out of every other module). Videos are probed through ReelExport's and ReelMedia's public
        // probes; CFFmpeg is never imported here.
        .target(
            name: "ReelLibrary",
            dependencies: [
                "ReelBoxes", "ReelExport", "ReelMedia", "ReelSystem",
                .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: ["PhotoLibrary"])),
            ]
        ),
        // The photo library in the fleet's PostgreSQL database (PostgresLibraryStore): the one module that
        // sees both ReelLibrary (GRDB) and ReelFleet (postgres-nio), so neither pulls in the other's driver.
        .target(
            name: "ReelLibraryFleet",
            dependencies: [
                "ReelLibrary", "ReelFleet",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Assets named by an http(s) URL: the download phase (HEAD, a resumable ranged GET into a
        // partial file, SHA-256 and size checked before any decoding, a download cache) under a network
        // policy that refuses private addresses by the address it connects to. The one module that
        // imports async-http-client, behind the Remote trait.
        .target(
            name: "ReelRemote",
            dependencies: [
                "ReelExport", "ReelMedia", "ReelSystem",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Remote"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Remote"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["Remote"])),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .when(traits: ["Remote"])),
            ]
        ),
        .executableTarget(
            name: "reel",
            dependencies: [
                "ReelMedia",
                "ReelExport",
                "ReelLibrary",
                "ReelQueue",
                "ReelSystem",
                // Left out of a build without the trait (Scripts/demo's): the commands that need them
                // then fail in one line naming the flag that brings them back.
                .target(name: "ReelLibraryFleet", condition: .when(traits: ["Fleet"])),
                .target(name: "ReelFleet", condition: .when(traits: ["Fleet"])),
                .target(name: "ReelServer", condition: .when(traits: ["Server"])),
                .target(name: "ReelImage", condition: .when(traits: ["Photos"])),
                .target(name: "ReelRemote", condition: .when(traits: ["Remote"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: ["BuildInfo"]
        ),
        // Build-time tool: turns Presets/*.json into Swift source, so a built or installed binary
        // carries the shipped presets while the JSON files stay the single source of truth.
        .executableTarget(name: "EmbedPresets"),
        .plugin(name: "PresetEmbedder", capability: .buildTool(), dependencies: ["EmbedPresets"]),
        // Build-time: the git commit the binary was built from (reel --version, the build-info metric).
        .plugin(name: "BuildInfo", capability: .buildTool()),

        // What every module stands on, with no media in it: the one thread helper (`startThread`,
        // `onOwnThread`), blocking I/O off Swift's pool (`BlockingIO`), the log handler, child processes
        // started with posix_spawn (Foundation's Process.run() can crash its caller on Linux in Swift
        // 6.3), and the one atomic writer every output, status file, resource, poster and thumbnail goes
        // through. CReelSystem bridges what Glibc leaves out: pidfd calls, extended attributes (the queue's
        // publish receipts) and renameat2(RENAME_NOREPLACE).
        .target(name: "CReelSystem"),
        .target(name: "ReelSystem", dependencies: ["CReelSystem", .product(name: "Logging", package: "swift-log")]),
        .target(
            name: "TestSupport",
            dependencies: ["ReelMedia", "ReelBoxes", "ReelSystem", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"),
        // The queue's contract as test cases any store runs (the spool here, PostgreSQL in the fleet).
        .target(
            name: "QueueContract", dependencies: ["ReelQueue", "ReelExport", "TestSupport"], path: "Tests/QueueContract"
        ),
        .testTarget(
            name: "ReelMediaTests",
            dependencies: [
                "ReelMedia", "ReelSystem", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "ReelExportTests", dependencies: ["ReelExport", "ReelMedia", "ReelSystem", "TestSupport"]),
        .testTarget(
            name: "ReelQueueTests",
            dependencies: [
                "ReelQueue", "ReelExport", "ReelMedia", "ReelSystem", "CReelSystem", "TestSupport", "QueueContract",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ReelCLITests", dependencies: ["TestSupport"]),
        // The photo library's store contract as test cases any LibraryStore runs (SQLite in ReelLibraryTests).
        .target(name: "LibraryContract", dependencies: ["ReelLibrary", "TestSupport"], path: "Tests/LibraryContract"),
        // Photos against vipsheader, ffprobe and ffmpeg's own upright renders; `reel probe`, `thumbnail`
        // and `export` of photos.
        .testTarget(name: "ReelImageTests", dependencies: ["ReelImage", "ReelMedia", "ReelExport", "TestSupport"]),
        .testTarget(name: "ReelBoxesTests", dependencies: ["ReelBoxes", "ReelSystem", "TestSupport"]),
        // The network policy's address ranges and URL rules; SHA-256 against sha256sum. (Downloads
        // themselves are tested through `reel` against nginx, in ReelCLITests.)
        .testTarget(name: "ReelRemoteTests", dependencies: ["ReelRemote", "ReelExport", "ReelMedia", "TestSupport"]),
        // The base: the atomic writer's rules, on file systems with and without RENAME_NOREPLACE and links.
        .testTarget(name: "ReelSystemTests", dependencies: ["ReelSystem", "TestSupport"]),
        // Fields against exiftool and ffprobe, pairing, scans, resources, hostile files, `reel library`.
        .testTarget(
            name: "ReelLibraryTests",
            dependencies: ["ReelLibrary", "ReelBoxes", "ReelSystem", "LibraryContract", "TestSupport"]),
        // The contract and the fleet's failure cases against a private PostgreSQL server the tests start;
        // the photo library's store contract there too (PostgresLibraryStore).
        .testTarget(
            name: "ReelFleetTests",
            dependencies: [
                "ReelFleet", "ReelQueue", "ReelExport", "QueueContract", "TestSupport", "ReelLibrary",
                "ReelLibraryFleet", "LibraryContract",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Fleet"])),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Scripts/bench-fleet's claim-and-finish load on a fleet's database (not part of `reel`).
        .executableTarget(
            name: "reel-bench-claims",
            dependencies: [
                "ReelFleet", "ReelQueue", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tests/ReelBenchClaims"),
        // A running worker's HTTP side, black box: metrics scraped and parsed, health, the status page
        // in headless Chromium.
        .testTarget(name: "ReelServerTests", dependencies: ["TestSupport"]),
        // The documentation against the code: the tables of codes and exit statuses made from the types,
        // no code's string spelled out beside its type, the options, codes and folders the articles name.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "reel", "ReelExport", "ReelQueue", "ReelMedia", "ReelLibrary", "ReelImage",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// No warnings: every target of Reel's own compiles with warnings as errors (SwiftPM leaves the setting
// out when Reel is a dependency fetched by URL, so it binds this repository's builds, not an app's).
for target in package.targets where target.type != .system && target.type != .plugin {
    target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
    target.cSettings = (target.cSettings ?? []) + [.treatAllWarnings(as: .error)]
}
