// This file imports Foundation beside PurgeKit, as every iOS source file
// imports Foundation: each call below compiles (no "ambiguous use") and gets
// PurgeKit's answer, checked against a value Foundation alone does not give.
// `URL.temporaryDirectory` is the one call that does not compile here
// (REFERENCE, Your app's code on Linux); `FileManager.default.temporaryDirectory`
// is its spelling in such a file. GuideSnippetTests compiles the documented
// samples the same way.
import Foundation
import Glibc
import PurgeKit
import PurgeTesting
import Testing

@Suite(.serialized) final class BothImportsTests {
    let home: ScratchHome
    var scratch: URL { home.url }

    init() throws {
        home = try ScratchHome("purgekit-both")
    }

    /// The folders, in a container that is a plain directory: Foundation
    /// alone answers `~/.cache`, `~/.local/share`, `$TMPDIR`. The calls repeat
    /// OffMountTests' on purpose: a file's imports decide which declaration a
    /// call gets, so a helper shared with a file that imports PurgeKit alone
    /// would not test this one's.
    @Test func theFoldersAreTheContainers() throws {
        setenv("PURGEFS_CONTAINER", scratch.path, 1)
        #expect(URL.cachesDirectory.path == scratch.path + "/Library/Caches")
        #expect(URL.documentsDirectory.path == scratch.path + "/Documents")
        #expect(URL.libraryDirectory.path == scratch.path + "/Library")
        #expect(FileManager.default.temporaryDirectory.path == scratch.path + "/tmp")
        #expect(FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).map(\.path) == [scratch.path + "/Library/Caches"])

        let support = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
        #expect(support.path == scratch.path + "/Library/Application Support")
        #expect(FileManager.default.fileExists(atPath: support.path), "made, as create: true asks")
        #expect(URL.applicationSupportDirectory == support)
        // The manager passed on as a plain FileManager answers the same.
        let manager: FileManager = FileManager.default
        #expect(try manager.url(for: .documentDirectory, in: .userDomainMask, appropriateFor: nil, create: false).path
                == scratch.path + "/Documents")
        #expect(manager.temporaryDirectory.path == scratch.path + "/tmp")
        // Directories outside the container's stay Foundation's.
        #expect(try FileManager.default.url(for: .userDirectory, in: .localDomainMask, appropriateFor: nil, create: false).path
                != scratch.path + "/Library")
    }

    /// Off a mount the two usages, which Foundation on Linux does not fetch
    /// (nil), are PurgeKit's: its available capacity.
    @Test func resourceValuesOfASetVariableAndOfALiteralArePurgeKits() throws {
        let file = scratch.appendingPathComponent("a.txt")
        try Data("a".utf8).write(to: file)
        let keys: Set<URLResourceKey> = [.volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityKey]
        let values = try file.resourceValues(forKeys: keys)
        #expect(values.volumeAvailableCapacityForImportantUsage != nil)
        #expect(values.volumeAvailableCapacity != nil, "Foundation's own value stays")
        #expect(try file.resourceValues(forKeys: [.volumeAvailableCapacityForOpportunisticUsageKey]).volumeAvailableCapacityForOpportunisticUsage != nil)
        #expect(try file.resourceValues(forKeys: Set([.volumeAvailableCapacityForImportantUsageKey])).volumeAvailableCapacityForImportantUsage != nil)
        let fetched: URLResourceValues? = try? file.resourceValues(forKeys: keys)
        #expect(fetched?.volumeAvailableCapacityForImportantUsage != nil)
        // Foundation's errors: a missing file, for a key Foundation fetches.
        expectCocoaError(.fileReadNoSuchFile) { _ = try self.scratch.appendingPathComponent("missing").resourceValues(forKeys: keys) }
    }

    /// On a mount: `setResourceValues` writes `excluded_from_backup` (Foundation
    /// alone drops it on Linux), the capacities are the device's (Foundation
    /// alone: the host's), `copyItem` makes a clone (Foundation alone: a copy
    /// with its own `content_id`).
    @Test func onAMountEachCallIsPurgeKits() throws {
        let home = scratch.appendingPathComponent("home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let device = try SimulatedDevice(container: home, capacity: .mebibytes(64))
        defer { try? device.unmount() }
        setenv("PURGEFS_CONTAINER", device.mountPoint.path, 1)

        var index = URL.documentsDirectory.appendingPathComponent("index.db")
        try Data(repeating: 1, count: 8192).write(to: index)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try index.setResourceValues(values)
        #expect(try device.attribute("excluded_from_backup", of: "Documents/index.db") == "1")
        let keys: Set<URLResourceKey> = [.isExcludedFromBackupKey, .volumeTotalCapacityKey]
        let read = try index.resourceValues(forKeys: keys)
        #expect(read.isExcludedFromBackup == true)
        #expect(read.volumeTotalCapacity.map(UInt64.init) == (try device.space()).capacity.bytes)
        // Through an inout parameter, as DocumentApp's excludeFromBackup(_:) makes the call.
        func include(_ url: inout URL) throws {
            var values = URLResourceValues()
            values.isExcludedFromBackup = false
            try url.setResourceValues(values)
        }
        try include(&index)
        #expect(try device.attribute("excluded_from_backup", of: "Documents/index.db") == "0")

        let copy = URL.documentsDirectory.appendingPathComponent("index copy.db")
        try FileManager.default.copyItem(at: index, to: copy)
        #expect(try device.attribute("content_id", of: copy.path) == device.attribute("content_id", of: index.path), "a clone")
        #expect(FileManager.default.isUbiquitousItem(at: copy) == false, "no cloud tier on this mount")
        index = copy
        #expect(try index.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup == false)
    }
}
