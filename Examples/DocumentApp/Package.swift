// swift-tools-version:6.0
import PackageDescription

// An example document and cache "app" written against Foundation as an iOS
// app is, running on Linux with PurgeKit, and its tests on a simulated device.
// The tests need the purgefs binary: PURGEFS_BIN, else purgefs on PATH.
let package = Package(
    name: "DocumentApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        // This repository; from elsewhere: .package(url: "https://.../purgefs.git", branch: "main")
        .package(name: "purgefs", path: "../.."),
    ],
    targets: [
        .target(name: "DocumentApp", dependencies: [
            // On Apple platforms the app needs nothing: Foundation and MetricKit answer.
            .product(name: "PurgeKit", package: "purgefs", condition: .when(platforms: [.linux])),
        ]),
        .testTarget(name: "DocumentAppTests", dependencies: [
            "DocumentApp",
            .product(name: "PurgeKit", package: "purgefs", condition: .when(platforms: [.linux])),
            .product(name: "PurgeTesting", package: "purgefs"),
        ]),
    ]
)
