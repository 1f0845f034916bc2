// swift-tools-version:6.0
import PackageDescription

// An example "app" and its tests under low disk, with purgefs's test library.
// The tests need the purgefs binary: PURGEFS_BIN, else purgefs on PATH.
let package = Package(
    name: "CacheApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        // This repository; from elsewhere: .package(url: "https://.../purgefs.git", branch: "main")
        .package(name: "purgefs", path: "../.."),
    ],
    targets: [
        .target(name: "CacheApp"),
        .testTarget(name: "CacheAppTests", dependencies: [
            "CacheApp",
            .product(name: "PurgeTesting", package: "purgefs"),
        ]),
    ]
)
