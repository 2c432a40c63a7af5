// swift-tools-version:6.0
import PackageDescription

// The C libraries are linked from their static archives (`-l:lib*.a`) so the
// release build is one self-contained executable. The system-library targets
// carry no `link` line; the modules that use them name the archives here.
let sodium: [LinkerSetting] = [.linkedLibrary(":libsodium.a")]
// libvpx comes from .build/vendor/libvpx when Scripts/build-libvpx made it
// (Debian's source with VP8 only: a smaller binary), else from the system;
// the linker skips a search directory that does not exist.
let media: [LinkerSetting] = [
    .unsafeFlags(["-L\(Context.packageDirectory)/.build/vendor/libvpx/lib"]),
    .linkedLibrary(":libvpx.a"), .linkedLibrary(":libopus.a"),
    .linkedLibrary(":libyuv.a"), .linkedLibrary(":libjpeg.a"),
    .linkedLibrary("m"), .linkedLibrary("pthread"),
]

let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]
/// The libraries the virtual-network scenarios run (hundreds of nodes with
/// real media and crypto) are optimized in debug builds too: unoptimized,
/// the 200-viewer crowds alone took 14 minutes of the suite. Tests still
/// build with -enable-testing, as every debug build does.
let optimizedInDebug: [SwiftSetting] = swift5 + [.unsafeFlags(["-O"], .when(configuration: .debug))]

let package = Package(
    name: "lvbnode",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "lvbnode", targets: ["lvbnode"]),
        // Libraries for the fuzzing package in Fuzz/ (and future embedders).
        .library(name: "LVBCore", targets: ["LVBCore"]),
        .library(name: "LVBCrypto", targets: ["LVBCrypto"]),
        .library(name: "LVBTransport", targets: ["LVBTransport"]),
        .library(name: "LVBGossip", targets: ["LVBGossip"]),
        .library(name: "LVBMedia", targets: ["LVBMedia"]),
        .library(name: "LVBRoom", targets: ["LVBRoom"]),
        .library(name: "LVBRendezvous", targets: ["LVBRendezvous"]),
        .library(name: "LVBReplay", targets: ["LVBReplay"]),
        .library(name: "LVBWeb", targets: ["LVBWeb"]),
        .library(name: "LVBTestSupport", targets: ["LVBTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        // swift-argument-parser 1.8.2 with its one FoundationEssentials import
        // removed (6 MB of the static binary): see Vendor/swift-argument-parser.
        .package(path: "Vendor/swift-argument-parser"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", path: "Sources/CSodium"),
        .systemLibrary(name: "COpus", path: "Sources/COpus"),
        .systemLibrary(name: "CVPX", path: "Sources/CVPX"),
        .systemLibrary(name: "CYUV", path: "Sources/CYUV"),
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG"),
        .systemLibrary(name: "CSpawn", path: "Sources/CSpawn"),

        .target(
            name: "LVBCore",
            dependencies: [.product(name: "Logging", package: "swift-log")],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBCrypto",
            dependencies: ["LVBCore", "CSodium"],
            swiftSettings: optimizedInDebug, linkerSettings: sodium),
        .target(
            name: "LVBTransport",
            dependencies: [
                "LVBCore", "LVBCrypto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBMedia",
            dependencies: [
                "LVBCore", "LVBCrypto", "COpus", "CVPX", "CYUV", "CJPEG",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimizedInDebug, linkerSettings: media),
        .target(
            name: "LVBGossip",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBRoom",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBMedia",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBReplay",
            dependencies: ["LVBCore", "LVBCrypto", "LVBGossip", "LVBMedia", "LVBTransport"],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBRendezvous",
            dependencies: ["LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBRoom", "LVBReplay",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBWeb",
            dependencies: ["LVBCore", "LVBMedia",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "NIOWebSocket", package: "swift-nio")],
            // The page's sources; the binary carries them as StudioPageFiles.swift (Scripts/embed-page).
            exclude: ["Page"],
            swiftSettings: optimizedInDebug),
        .target(
            name: "LVBMesh",
            dependencies: ["LVBCore", "LVBTransport", "LVBWeb", "CSpawn",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: swift5),
        .target(
            name: "LVBTestSupport",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBMedia", "LVBRoom",
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swift5),
        .executableTarget(
            name: "lvbnode",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBMedia", "LVBRoom", "LVBRendezvous", "LVBWeb", "LVBMesh", "LVBReplay",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swift5, linkerSettings: media),
        .executableTarget(
            name: "LVBBench",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBMedia", "LVBRoom",
                // The virtual network, for rooms larger than processes on one machine reach.
                "LVBTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swift5),

        // Test-only assertions shared by the test targets (never in a product).
        .target(name: "TestAssertions", path: "Tests/TestAssertions", swiftSettings: swift5),
        .testTarget(
            name: "LVBCoreTests", dependencies: ["LVBCore"], swiftSettings: swift5),
        .testTarget(
            name: "LVBCryptoTests", dependencies: ["LVBCore", "LVBCrypto", "TestAssertions"],
            resources: [.copy("Fixtures")], swiftSettings: swift5),
        .testTarget(
            name: "LVBTransportTests",
            dependencies: [
                "LVBCore", "LVBCrypto", "LVBTransport", "LVBTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBGossipTests",
            dependencies: ["LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBRoom", "LVBTestSupport", "TestAssertions"],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBMediaTests",
            dependencies: ["LVBCore", "LVBMedia", "LVBTestSupport", "TestAssertions"],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBRoomTests",
            dependencies: ["LVBCore", "LVBCrypto", "LVBTransport", "LVBGossip", "LVBMedia", "LVBRoom", "LVBRendezvous", "LVBTestSupport",
                           "TestAssertions"],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBReplayTests",
            dependencies: ["LVBCore", "LVBCrypto", "LVBGossip", "LVBMedia", "LVBReplay", "LVBTestSupport", "LVBTransport", "TestAssertions"],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBRendezvousTests",
            dependencies: ["LVBCore", "LVBCrypto", "LVBGossip", "LVBMedia", "LVBRendezvous", "LVBReplay", "LVBTestSupport", "LVBTransport", "TestAssertions"],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBMeshTests",
            dependencies: ["LVBMesh", "LVBWeb",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: swift5),
        .testTarget(
            name: "LVBWebTests",
            dependencies: ["LVBCore", "LVBMedia", "LVBWeb", "TestAssertions",
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: swift5),
        .testTarget(
            name: "EndToEndTests",
            // LVBCrypto and LVBTransport craft real handshakes to flood the binary with.
            dependencies: ["LVBCore", "LVBCrypto", "LVBTransport", "LVBMedia", "LVBMesh", "LVBTestSupport", "TestAssertions"],
            swiftSettings: swift5),
    ]
)
