// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Reel",
    products: [
        .executable(name: "reel", targets: ["reel"]),
        .library(name: "ReelExport", targets: ["ReelExport"]),
        .library(name: "ReelQueue", targets: ["ReelQueue"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.25.0"),
        // Metrics through swift-metrics' API (no backend) and the worker as a swift-service-lifecycle Service.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // The worker's HTTP side (ReelServer): Prometheus text, health, the status page.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        // `swift package generate-documentation` (Scripts/docs): DocC for ReelExport and ReelQueue.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
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
        // The only module that imports CFFmpeg and CFFmpegShim: owners for FFmpeg objects and the
        // transcode and remux pipelines.
        .target(
            name: "ReelMedia",
            dependencies: ["CFFmpeg", "CFFmpegShim", .product(name: "Logging", package: "swift-log")]
        ),
        // Asset, Preset, OutputType and ExportSession: what an app developer sees.
        .target(
            name: "ReelExport",
            dependencies: ["ReelMedia", .product(name: "Logging", package: "swift-log")],
            plugins: ["PresetEmbedder"]
        ),
        // Jobs, the spool-directory store, status files and the worker pool.
        .target(
            name: "ReelQueue",
            dependencies: [
                "ReelMedia", "ReelExport", "ReelSpawn", "CSpawn", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The fleet's store: jobs in PostgreSQL (postgres-nio), for many machines on one queue. A target of
        // its own, so an app that only exports never links NIO or a database driver.
        .target(
            name: "ReelFleet",
            dependencies: [
                "ReelQueue", "ReelExport", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A worker's HTTP side: Prometheus metrics, health, readiness and the status page (Hummingbird,
        // swift-prometheus). A target of its own, so an app that only exports or queues never links NIO.
        .target(
            name: "ReelServer",
            dependencies: [
                "ReelQueue", "ReelExport", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "reel",
            dependencies: [
                "ReelMedia",
                "ReelExport",
                "ReelQueue",
                "ReelFleet",
                "ReelServer",
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

        // Child processes started with posix_spawn (Foundation's Process.run() can crash its caller on
        // Linux in Swift 6.3): the worker's isolated exports and the tests' tools. CSpawn also bridges
        // the pidfd calls and extended attributes (the queue's publish receipts) that Glibc leaves out.
        .target(name: "CSpawn"),
        .target(name: "ReelSpawn", dependencies: ["CSpawn"]),
        .target(
            name: "TestSupport",
            dependencies: ["ReelMedia", "ReelSpawn", .product(name: "Logging", package: "swift-log")],
            path: "Tests/TestSupport"),
        // The queue's contract as test cases any store runs (the spool here, PostgreSQL in the fleet).
        .target(
            name: "QueueContract", dependencies: ["ReelQueue", "ReelExport", "TestSupport"], path: "Tests/QueueContract"
        ),
        .testTarget(
            name: "ReelMediaTests",
            dependencies: ["ReelMedia", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ReelExportTests", dependencies: ["ReelExport", "ReelMedia", "TestSupport"]),
        .testTarget(
            name: "ReelQueueTests",
            dependencies: [
                "ReelQueue", "ReelExport", "ReelMedia", "ReelSpawn", "CSpawn", "TestSupport", "QueueContract",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ReelCLITests", dependencies: ["TestSupport"]),
        // The contract and the fleet's failure cases against a private PostgreSQL server the tests start.
        .testTarget(
            name: "ReelFleetTests",
            dependencies: [
                "ReelFleet", "ReelQueue", "ReelExport", "QueueContract", "TestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log"),
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
                "reel", "ReelExport", "ReelQueue", "ReelMedia",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
