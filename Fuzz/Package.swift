// swift-tools-version:6.0
import Foundation
import PackageDescription

// libFuzzer targets for every parser that reads bytes from the network or a
// user. Built and run by Scripts/fuzz, which builds with:
//
//   swift build -c debug --package-path Fuzz \
//       -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
//
// Each target defines `LLVMFuzzerTestOneInput` and an `@main` that runs
// libFuzzer's driver on it (SwiftPM renames an executable's `main` on Linux,
// so libFuzzer's own `main` cannot be the entry point).

let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]

/// SwiftPM names a path dependency after its directory, so the root package's
/// identity is whatever the repository was cloned as ("lvbnode", "main", …).
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

func lvb(_ product: String) -> Target.Dependency { .product(name: product, package: root) }

let package = Package(
    name: "lvbnode-fuzz",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: ".."),
    ],
    targets: [
        .systemLibrary(name: "CLibFuzzer", path: "Sources/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer"], swiftSettings: swift5),
        .executableTarget(
            name: "FuzzPacket",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBTransport")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzTicket",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBTransport")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzEvent",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBGossip"), lvb("LVBRoom")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzGossip",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBGossip"), lvb("LVBRoom"), lvb("LVBTestSupport")],
            swiftSettings: swift5),
        .target(
            name: "FuzzWorld",
            dependencies: [lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBTransport"), lvb("LVBTestSupport")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzReceive",
            dependencies: ["FuzzSupport", "FuzzWorld", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBTransport")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzReplay",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBReplay")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzMedia",
            dependencies: ["FuzzSupport", lvb("LVBMedia")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzMediaReceive",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBMedia")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzSeal",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBMedia")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzRoom",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBRoom")],
            swiftSettings: swift5),
        .executableTarget(
            name: "FuzzRendezvous",
            dependencies: ["FuzzSupport", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBGossip"), lvb("LVBRendezvous")],
            swiftSettings: swift5),
        // Writes the seed corpora in Corpus/ (`swift run --package-path Fuzz MakeCorpus`).
        .executableTarget(
            name: "MakeCorpus",
            dependencies: ["FuzzWorld", lvb("LVBCore"), lvb("LVBCrypto"), lvb("LVBTransport"), lvb("LVBGossip"),
                           lvb("LVBTestSupport"), lvb("LVBMedia"), lvb("LVBRoom"), lvb("LVBRendezvous")],
            swiftSettings: swift5),
    ]
)
