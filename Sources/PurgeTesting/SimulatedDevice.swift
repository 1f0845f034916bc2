import Foundation
import PurgeCore
import PurgeSys
import Synchronization

/// An app container mounted with purgefs on a simulated device, for tests:
///
/// ```swift
/// let device = try SimulatedDevice(container: dir, capacity: .mebibytes(200))
/// defer { try? device.unmount() }
/// try device.squeeze(available: .mebibytes(5))
/// try device.waitForMonitor()
/// #expect(try device.purged(in: "Library/Caches").count > 0)
/// ```
///
/// Every call runs the `purgefs` binary (`PurgefsBinary.locate()`:
/// `PURGEFS_BIN`, else `PATH`) or reads the mount's `user.purgefs.*`
/// attributes. The daemon is a process of its own, started by `purgefs
/// mount`: a test process never serves its own mount (one that serves and
/// touches its mount can deadlock). The mount is in place unless a mount
/// point is given, so the app keeps its paths. Unmounted by `unmount()`,
/// or at the latest when the device is released.
public final class SimulatedDevice: Sendable {
    /// The container's canonical path.
    public let container: URL
    /// Where the container is mounted: the container itself unless given.
    public let mountPoint: URL
    public let binary: PurgefsBinary
    /// What the mount was given with `-o` (capacity first).
    public let options: [String]
    /// When the mount was made: `purged(in:)` counts from here.
    public let mountedAt: Date
    private let stateDirectory: String
    private let mounted = Mutex(true)

    /// Mounts `container` on a simulated device of `capacity` with the
    /// other mount `options` (`["low=5M", "high=10M"]`, as `-o` takes them).
    /// Returns once the mount is usable; throws purgefs's line when it cannot be made.
    public init(container: URL, capacity: ByteCount, options: [String] = [], mountPoint: URL? = nil,
                binary: PurgefsBinary? = nil) throws {
        let binary = try binary ?? PurgefsBinary.locate()
        let containerPath: String
        do throws(Errno) {
            containerPath = try Paths.canonical(container.path)
        } catch {
            throw PurgeTestingError("container \(container.path): \(error)")
        }
        let all = ["capacity=\(capacity.bytes)"] + options
        var state = containerPath + "/" + MountOptions.defaultStateDirectoryName
        if let parsed = try? MountOptions.parse(all), let directory = parsed.stateDirectory { state = directory }
        self.binary = binary
        self.container = URL(fileURLWithPath: containerPath)
        self.mountPoint = mountPoint.map { URL(fileURLWithPath: $0.path) } ?? URL(fileURLWithPath: containerPath)
        self.options = all
        self.stateDirectory = state
        self.mountedAt = Date()
        try binary.run(["mount", containerPath] + (mountPoint.map { [$0.path] } ?? []) + ["-o", all.joined(separator: ",")])
    }

    deinit {
        try? unmount()
    }

    /// The path of `relative` (to the container) through the mount.
    public func path(_ relative: String) -> String {
        relative.isEmpty || relative == "." ? mountPoint.path : mountPoint.path + "/" + relative
    }

    // MARK: The device

    /// Leaves `available` bytes available by raising (or lowering) the
    /// simulated external usage: `purgefs space --available`. The monitor
    /// purges within a second if that is below the low mark;
    /// `waitForMonitor()` waits for it.
    public func squeeze(available: ByteCount) throws {
        try binary.run(["space", mountPoint.path, "--available", String(available.bytes)])
    }

    /// Sets the space used outside the container: `purgefs space --external`.
    public func setExternal(_ external: ByteCount) throws {
        try binary.run(["space", mountPoint.path, "--external", String(external.bytes)])
    }

    /// Resizes the simulated device: `purgefs space --capacity`.
    public func setCapacity(_ capacity: ByteCount) throws {
        try binary.run(["space", mountPoint.path, "--capacity", String(capacity.bytes)])
    }

    /// The device's figures now, from the root's attributes.
    public func space() throws -> Space {
        func read(_ attribute: PurgeAttribute) throws -> UInt64 { try number(attribute, of: mountPoint.path) }
        return Space(capacity: ByteCount(bytes: try read(.capacity)), external: ByteCount(bytes: try read(.external)),
                     available: ByteCount(bytes: try read(.available)),
                     availableForImportantUsage: ByteCount(bytes: try read(.availableImportant)),
                     availableForOpportunisticUsage: ByteCount(bytes: try read(.availableOpportunistic)),
                     containerUsed: ByteCount(bytes: try read(.containerUsed)), purgeable: ByteCount(bytes: try read(.purgeable)),
                     peakUsed: ByteCount(bytes: try read(.peakUsed)), noSpaceReplies: Int(try read(.enospc)))
    }

    /// The device as the mount sees it (`user.purgefs.*` on the root).
    public struct Space: Equatable, Sendable {
        public var capacity, external, available: ByteCount
        /// Available plus what purging could free (`volumeAvailableCapacityForImportantUsage`).
        public var availableForImportantUsage: ByteCount
        /// Available less the low mark (`volumeAvailableCapacityForOpportunisticUsage`).
        public var availableForOpportunisticUsage: ByteCount
        public var containerUsed, purgeable: ByteCount
        /// The highest `containerUsed` since the mount.
        public var peakUsed: ByteCount
        /// Requests the mount answered `ENOSPC` since it was made.
        public var noSpaceReplies: Int
    }

    // MARK: Purging

    /// Purges at least `amount` now, least recently used first: `purgefs purge --bytes`.
    public func purge(_ amount: ByteCount) throws {
        try binary.run(["purge", mountPoint.path, "--bytes", String(amount.bytes)])
    }

    /// Purges every purgeable file: `purgefs purge --all`.
    public func purgeAll() throws {
        try binary.run(["purge", mountPoint.path, "--all"])
    }

    /// Keeps `relative` (a file, or a directory's files) from being purged: `purgefs pin`.
    public func pin(_ relative: String) throws {
        try binary.run(["pin", path(relative)])
    }

    /// Lets it be purged again: `purgefs unpin`.
    public func unpin(_ relative: String) throws {
        try binary.run(["unpin", path(relative)])
    }

    /// The files purged since the mount was made, in the order they went;
    /// with `subtree` (relative to the container), only those inside it.
    public func purged(in subtree: String? = nil) throws -> [PurgeEvent] {
        let output = try binary.run(["log", mountPoint.path, "--json"])
        let events = output.split(whereSeparator: \.isNewline).compactMap { PurgeEvent(line: $0) }
            .filter { $0.time >= mountedAt }
        guard let subtree, !subtree.isEmpty, subtree != "." else { return events }
        let prefix = subtree.hasSuffix("/") ? String(subtree.dropLast()) : subtree
        return events.filter { $0.path == prefix || $0.path.hasPrefix(prefix + "/") }
    }

    /// Returns once the space monitor has finished a whole round that began
    /// after this call: whatever purge the device needed when it was called
    /// is then done. It watches `user.purgefs.monitor_rounds` (the daemon's
    /// count of finished rounds) grow by two; the monitor looks four times
    /// a second, so this takes about half a second.
    public func waitForMonitor(timeout: Duration = .seconds(30)) throws {
        let start = try number(.monitorRounds, of: mountPoint.path)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while try number(.monitorRounds, of: mountPoint.path) < start + 2 {
            guard clock.now < deadline else {
                throw PurgeTestingError("the space monitor of \(mountPoint.path) did not finish a round within \(timeout)")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    // MARK: Usage

    /// What a subtree holds (`user.purgefs.*` of the directory, or of the
    /// file), relative to the container; `""` is the whole container.
    public func usage(of relative: String) throws -> Usage {
        let target = path(relative)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory) else {
            throw PurgeTestingError("\(target): no such file or directory")
        }
        let size = try number(.size, of: target), allocated = try number(.allocated, of: target)
        if isDirectory.boolValue {
            return Usage(size: ByteCount(bytes: size), files: Int(try number(.files, of: target)),
                         allocated: ByteCount(bytes: allocated), purgeable: ByteCount(bytes: try number(.purgeable, of: target)),
                         cloneSavings: ByteCount(bytes: try number(.cloneSavings, of: target)))
        }
        // On a file, purgeable is a flag: the file's bytes count as purgeable when it is set.
        let inZone = try number(.purgeable, of: target) == 1
        return Usage(size: ByteCount(bytes: size), files: 1, allocated: ByteCount(bytes: allocated),
                     purgeable: inZone ? ByteCount(bytes: allocated) : 0, cloneSavings: 0)
    }

    /// A subtree's totals, exact at the moment of the read.
    public struct Usage: Equatable, Sendable {
        /// Logical bytes: the sum of the regular files' sizes.
        public var size: ByteCount
        /// Regular files.
        public var files: Int
        /// Bytes stored on disk, clone-shared data once.
        public var allocated: ByteCount
        /// Bytes purging could free.
        public var purgeable: ByteCount
        /// Bytes not stored thanks to clones.
        public var cloneSavings: ByteCount
    }

    // MARK: Unmounting

    /// Unmounts (`purgefs unmount`) and waits for the daemon to save its
    /// state and end, so the container can be mounted again or removed at
    /// once. Calling it again does nothing.
    public func unmount() throws {
        guard mounted.withLock({ (isMounted: inout Bool) -> Bool in
            defer { isMounted = false }
            return isMounted
        }) else { return }
        try binary.run(["unmount", mountPoint.path])
        // The daemon's pid is in its state directory's lock file, readable now that the mount is gone.
        guard let data = try? FileDescriptor.readFile(stateDirectory + "/" + StateLockHolder.fileName, limit: 1 << 16),
              let holder = StateLockHolder(decoding: data) else { return }
        let daemon = ProcessID(rawValue: holder.processID)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while daemon.isRunning {
            guard clock.now < deadline else {
                throw PurgeTestingError("the daemon of \(mountPoint.path) (pid \(daemon)) did not end within 10 s of the unmount")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    /// The text of `user.purgefs.NAME` of a path (absolute, or relative to
    /// the container: `path(_:)`), or nil where the mount does not answer it
    /// (`ENODATA`): `content_id`, `download_status`, `excluded_from_backup`, ...
    public func attribute(_ name: String, of relative: String) throws -> String? {
        try Self.attribute(name, of: relative.hasPrefix("/") ? relative : path(relative))
    }

    /// `attribute(_:of:)` of an absolute path.
    public static func attribute(_ name: String, of path: String) throws -> String? {
        do throws(Errno) {
            return String(decoding: try Paths.extendedAttribute(PurgeAttribute.prefix + name, of: path), as: UTF8.self)
        } catch where error == .noData {
            return nil
        } catch {
            throw PurgeTestingError("cannot read \(PurgeAttribute.prefix + name) of \(path): \(error)")
        }
    }

    private func number(_ attribute: PurgeAttribute, of path: String) throws -> UInt64 {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try Paths.extendedAttribute(attribute.fullName, of: path)
        } catch {
            throw PurgeTestingError("cannot read \(attribute.fullName) of \(path): \(error)")
        }
        guard let value = UInt64(String(decoding: bytes, as: UTF8.self)) else {
            throw PurgeTestingError("\(attribute.fullName) of \(path) is not a number")
        }
        return value
    }
}
