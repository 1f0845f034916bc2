import Glibc
import PurgeCore
import PurgeSys

/// Reading a `UsageReport` off a mount: the figures its attributes answer,
/// for `purgefs usage`, the storage page, `ui` and `run`'s timeline.
extension UsageReport {
    /// The report of a located directory on a mount, with the zones and bundle its daemon recorded.
    public static func read(at location: MountLocation, _ access: AttributeAccess) throws(CommandExit) -> UsageReport {
        guard let mount = location.mount, let relative = location.relative else {
            throw .failure("\(location.path) is not on a purgefs mount (usage reads the figures a mount answers)")
        }
        let record = try RuntimeRecordLocator.record(of: mount, at: location.path)
        return try read(path: location.path, mountpoint: mount.mountPoint, relative: relative, access,
                        zones: record.zones, bundle: record.bundle, isDirectory: { (try? Paths.canonical($0)) == $0 })
    }

    /// The breakdown of each container of a shared device whose mount answers, by mount point.
    public static func memberReports(_ device: DeviceUsageReport, _ access: AttributeAccess) -> [String: UsageReport] {
        var reports: [String: UsageReport] = [:]
        for container in device.containers {
            guard let location = try? MountLocation.find(container.mountpoint),
                  let report = try? UsageReport.read(at: location, access) else { continue }
            reports[container.mountpoint] = report
        }
        return reports
    }

    /// Gathers the figures. `isDirectory(path)`: whether a category's path is
    /// really there, not through a symlink (which the attribute calls would
    /// follow, counting something twice or reading outside the mount).
    static func read(path: String, mountpoint: String, relative: String, _ access: AttributeAccess,
                     zones zonePaths: [String] = UsageReport.zonePaths, bundle: String? = nil,
                     isDirectory: (String) -> Bool) throws(CommandExit) -> UsageReport {
        guard let directory = try DirectoryFigures.readIfPresent(path, access) else {
            throw .failure("\(path) is not a directory (usage shows a directory's breakdown)")
        }
        let device = try DeviceFigures.read(root: mountpoint, access)
        /// The figures of a category: read where it lies inside the directory, all of the directory when it lies inside it.
        func figures(of category: String) throws(CommandExit) -> DirectoryFigures? {
            switch UsageReport.overlap(of: category, with: relative) {
            case .apart:
                return nil
            case .around:
                return directory
            case .inside:
                let categoryPath = mountpoint + "/" + category
                guard isDirectory(categoryPath) else { return nil }
                return try DirectoryFigures.readIfPresent(categoryPath, access)
            }
        }
        let documents = try figures(of: UsageReport.documentsPath)?.size ?? 0
        var zones: [UsageReport.Zone] = []
        for zone in zonePaths {
            if let found = try figures(of: zone) {
                zones.append(.init(path: zone, size: found.size, purgeable: found.purgeable))
            }
        }
        let app = try bundle.map { (bundle) throws(CommandExit) -> UInt64 in try figures(of: bundle)?.size ?? 0 }
        let excluded = try access.numberIfAnswered(.excludedFromBackup, of: path).map { $0 == 1 }
        var report = UsageReport(path: path, mountpoint: mountpoint, app: app, documents: documents, zones: zones,
                                 directory: directory, device: device,
                                 notFlat: try access.numberIfAnswered(.notFlat, of: mountpoint) ?? 0, excludedFromBackup: excluded)
        if UsageReport.overlap(of: UsageReport.documentsPath, with: relative) != .apart {
            let documentsPath = UsageReport.overlap(of: UsageReport.documentsPath, with: relative) == .around
                ? path : mountpoint + "/" + UsageReport.documentsPath
            if isDirectory(documentsPath) { report.cloudEvictable = evictableBytes(under: documentsPath, access) }
        }
        return report
    }

    /// How many files `cloud_evictable` looks at, at most: the figure is a
    /// walk (no attribute sums it), so a huge Documents costs a bounded time.
    public static let evictableWalkLimit = 20_000

    /// The allocated bytes of the files under `directory` whose
    /// `user.purgefs.evictable` is `1`. Stops at the first file that does
    /// not answer it (the mount has no cloud=), and after `evictableWalkLimit` files.
    static func evictableBytes(under directory: String, _ access: AttributeAccess) -> UInt64 {
        guard let root = try? FileDescriptor.open(path: directory, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { return 0 }
        defer { root.closeQuietly() }
        var total: UInt64 = 0
        var seen = 0
        try? TreeWalk(root: root).forEachRegularFile { relative, _ in
            seen += 1
            let path = directory + "/" + relative
            let value: [UInt8]
            do throws(Errno) {
                value = try access.read(PurgeAttribute.evictable.fullName, path)
            } catch {
                // ENODATA: the mount has no cloud=, so no file answers it. Another
                // error (the file went away) is that file's alone.
                return error != .noData && seen < evictableWalkLimit
            }
            if AttributeAccess.decimal(value) == 1, let allocated = try? access.numberIfAnswered(.allocated, of: path) {
                total += allocated
            }
            return seen < evictableWalkLimit
        }
        return total
    }
}
