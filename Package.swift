// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "purgefs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "purgefs", targets: ["purgefs"]),
        // For other packages' tests: a container on a simulated device, driving the purgefs binary.
        .library(name: "PurgeTesting", targets: ["PurgeTesting"]),
        // For apps: Foundation's storage calls and MetricKit's shape, answered by a purgefs mount (REFERENCE, Your app's code on Linux).
        .library(name: "PurgeKit", targets: ["PurgeKit"]),
    ],
    targets: [
        // libfuse3 through pkg-config, with a shim that pins FUSE_USE_VERSION.
        .systemLibrary(
            name: "CFuse",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        // SQLite 3 through pkg-config, with a shim for what Swift cannot call (SQLITE_TRANSIENT).
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Linux calls and constants that Swift's Glibc module does not expose.
        // liburing (Debian's liburing-dev) drives FUSE over io_uring (fuse_ring.c).
        .target(name: "CLinux", linkerSettings: [.linkedLibrary("uring")]),
        // The policy: FUSE-free, I/O-free, tested in-process; a folder per concern (docs/DESIGN.md, PurgeCore).
        // libm: Double rounding calls floor/trunc, and nothing else links libm
        // into a binary that uses PurgeCore without Glibc (its tests).
        .target(name: "PurgeCore", linkerSettings: [.linkedLibrary("m")]),
        // Typed wrappers over the syscalls purgefs uses; the only code that calls libc.
        // PurgeCore for the value types two wrappers return (docs/DESIGN.md, Targets).
        .target(name: "PurgeSys", dependencies: ["CLinux", "PurgeCore"]),
        // The metrics history: typed wrappers over SQLite; the only code that calls it.
        .target(name: "PurgeStore", dependencies: ["CSQLite", "PurgeCore"]),
        // The FUSE adapter.
        // CLinux for the kernel's own structures and constants (the wire, passthrough, fallocate modes).
        .target(name: "PurgeFS", dependencies: ["CFuse", "CLinux", "PurgeCore", "PurgeSys", "PurgeStore"]),
        // The engines the commands drive, usable without the command line: `run` (the session, the
        // job that supervises the command, the scenario player, the summary and timeline), `explore` (the
        // recorded run, crash states built and checked, golden views, reports, replay), the pages and the
        // ui server, the usage report, the mounts a command makes for itself, reading attributes (docs/DESIGN.md, PurgeEngines).
        // PurgeFS for a shared device's directory, which the device's usage report reads, and for the
        // operation log's reading side (OperationLog), beside the recorder that writes it.
        .target(name: "PurgeEngines", dependencies: ["PurgeCore", "PurgeSys", "PurgeFS"]),
        // The command line: argument parsing, subcommands, daemonizing; a library so it can be tested.
        // A command whose work is an engine (run, explore, ui) only parses for it.
        .target(name: "PurgeCommand", dependencies: ["PurgeEngines", "PurgeFS", "PurgeCore", "PurgeSys", "PurgeStore"]),
        // Before each build: the commit HEAD is at (git), or "unknown" without git.
        .plugin(name: "CommitStamp", capability: .buildTool()),
        // A tiny main that hands over to PurgeCommand. CommitStamp writes the
        // commit of the build into it, for --version: a new commit recompiles
        // only this target.
        .executableTarget(name: "purgefs", dependencies: ["PurgeCommand"], plugins: ["CommitStamp"]),
        // The test library: SimulatedDevice runs the purgefs binary and reads its attributes (README, Testing an app).
        .target(name: "PurgeTesting", dependencies: ["PurgeCore", "PurgeSys"]),
        // Foundation's own answers, asked from a module that does not shadow them (PurgeKit's fallbacks),
        // and the FileManager subclass whose overrides PurgeKit answers (FileManager.default).
        .target(name: "PurgeKitFoundation"),
        // The app's side: container URLs, ubiquitous items, resource values, clones, MetricKit's shape. No FUSE.
        .target(name: "PurgeKit", dependencies: ["PurgeKitFoundation", "PurgeCore", "PurgeSys", "PurgeStore"]),
        // What several test targets share (the seeded generator).
        .target(name: "TestSupport", dependencies: ["PurgeCore"], path: "Tests/TestSupport"),
        // Every parser of user input as one fuzz target each, and the mutator of the seeded fuzz tests
        // (ParserFuzzTests); scripts/fuzz runs the same targets under libFuzzer.
        .target(name: "FuzzHarness", dependencies: ["PurgeCore", "PurgeFS", "PurgeEngines", "PurgeCommand"], path: "Tests/FuzzHarness"),
        .testTarget(name: "PurgeCoreTests", dependencies: ["PurgeCore", "TestSupport", "FuzzHarness"]),
        .testTarget(name: "PurgeSysTests", dependencies: ["PurgeSys", "PurgeCore"]),
        .testTarget(name: "PurgeStoreTests", dependencies: ["PurgeStore", "PurgeCore"]),
        // The adapter's own logic in-process, without mounting (the observers' fan-out).
        .testTarget(name: "PurgeFSTests", dependencies: ["PurgeFS", "CFuse", "PurgeCore", "PurgeSys"]),
        // The engines in-process, without the command line or a mount.
        .testTarget(name: "PurgeEnginesTests", dependencies: ["PurgeEngines", "PurgeCore", "PurgeSys"]),
        .testTarget(name: "PurgeCommandTests", dependencies: ["PurgeCommand", "PurgeEngines", "PurgeCore", "PurgeSys", "FuzzHarness"]),
        .testTarget(name: "PurgeTestingTests", dependencies: ["PurgeTesting"]),
        .testTarget(name: "PurgeKitTests", dependencies: ["PurgeKit", "PurgeCore", "PurgeStore", "PurgeTesting"]),
        .testTarget(name: "IntegrationTests", dependencies: ["PurgeSys", "PurgeCore", "PurgeEngines", "CLinux", "TestSupport"]),
    ]
)

// scripts/fuzz sets PURGEFS_FUZZ and builds this product alone, in a scratch
// path of its own, with -sanitize=fuzzer,address: libFuzzer's main calls its
// LLVMFuzzerTestOneInput. The normal build never sees it (without libFuzzer
// it has no main to link).
if Context.environment["PURGEFS_FUZZ"] != nil {
    package.products.append(.executable(name: "purgefs-fuzz", targets: ["PurgeFuzz"]))
    package.targets.append(.executableTarget(name: "PurgeFuzz", dependencies: ["FuzzHarness"], path: "Tests/Fuzz"))
}
