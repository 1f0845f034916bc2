import Glibc
import PurgeCore
import PurgeFS
import PurgeSys

/// `purgefs usage --device NAME`: a shared device as Settings > Storage
/// shows a phone: capacity, used, available, then each container (app),
/// biggest first, with its size, its purgeable share and its cache quota.
/// Read from the device's directory (the members' records, refreshed four
/// times a second by their daemons), so no mount is touched.
public struct DeviceUsageReport: Equatable {
    struct Container: Equatable {
        var container: String
        var mountpoint: String
        var processID: Int32
        var used: UInt64
        var size: UInt64
        var purgeable: UInt64
        var quota: UInt64
        var quotaGiven: Bool
        var lastUse: UInt64
    }

    var name: String
    var policy: DevicePolicy
    var simulated: Bool
    var capacity: UInt64
    var external: UInt64
    var used: UInt64
    var available: UInt64
    var purgeable: UInt64
    var containers: [Container]

    /// The device's report, or the line saying why there is none.
    public static func read(_ name: String) throws(CommandExit) -> DeviceUsageReport {
        do throws(DeviceNameProblem) { _ = try DeviceName.validate(name) } catch {
            throw .usage("usage: --device \(name): \(error)")
        }
        let missing = CommandExit.failure("no device \(name): no container is mounted with -o device=\(name)")
        let directory: DeviceDirectory
        do { directory = try DeviceDirectory.open(name, create: false) } catch {
            if error.isMissing { throw missing }
            throw .failure("device \(name): \(error)")
        }
        defer { directory.close() }
        let snapshot = directory.snapshot()
        guard let settings = snapshot.settings, !snapshot.members.isEmpty else { throw missing }
        // A real device: the first container's filesystem.
        var backing = BackingFigures(size: 0, available: 0)
        if settings.capacity == nil, let first = snapshot.members.first,
           let root = try? FileDescriptor.open(path: first.container, flags: OpenFlags.path | O_DIRECTORY),
           let figures = try? root.fileSystemStatus() {
            root.closeQuietly()
            backing = BackingFigures(size: UInt64(figures.f_blocks) * UInt64(figures.f_frsize),
                                     available: UInt64(figures.f_bavail) * UInt64(figures.f_frsize))
        }
        return report(snapshot, settings: settings, backing: backing)
    }

    struct BackingFigures { var size: UInt64; var available: UInt64 }

    static func report(_ snapshot: DeviceSnapshot, settings: DeviceSettings, backing: BackingFigures) -> DeviceUsageReport {
        let quotas = snapshot.quotas(backingSize: backing.size)
        let containersUsed = snapshot.used
        let capacity = settings.capacity ?? backing.size
        let available = settings.capacity != nil
            ? capacity.subtractingClamped(settings.external).subtractingClamped(containersUsed)
            : backing.available.subtractingClamped(settings.external)
        let containers = snapshot.members.map {
            Container(container: $0.container, mountpoint: $0.mountpoint, processID: $0.processID, used: $0.used,
                      size: $0.size, purgeable: $0.purgeable, quota: quotas[$0.key] ?? 0, quotaGiven: $0.cacheQuota != nil,
                      lastUse: $0.lastUse)
        }.sorted { ($0.used, $1.container) > ($1.used, $0.container) }
        return DeviceUsageReport(
            name: snapshot.name, policy: settings.policy, simulated: settings.capacity != nil, capacity: capacity,
            external: settings.external, used: capacity.subtractingClamped(available), available: available,
            purgeable: snapshot.members.reduce(UInt64(0)) { $0.addingClamped($1.purgeable) }, containers: containers)
    }

    public var text: String {
        var lines = ["Device \(name): \(HumanText.size(capacity))\(simulated ? " (simulated)" : ""), "
                     + "\(HumanText.size(used)) used, \(HumanText.size(available)) available, "
                     + "\(HumanText.size(purgeable)) purgeable; policy \(policy.rawValue)"]
        let width = max(16, containers.map(\.container.count).max() ?? 0)
        lines.append(HumanText.left("CONTAINER", width) + "  " + HumanText.right("SIZE", 10) + "  "
                     + HumanText.right("PURGEABLE", 10) + "  " + HumanText.right("QUOTA", 10))
        for container in containers {
            lines.append(HumanText.left(container.container, width) + "  " + HumanText.right(HumanText.size(container.used), 10)
                         + "  " + HumanText.right(HumanText.size(container.purgeable), 10) + "  "
                         + HumanText.right(HumanText.size(container.quota) + (container.quotaGiven ? "" : "*"), 10))
        }
        lines.append(HumanText.left("other (external)", width) + "  " + HumanText.right(HumanText.size(external), 10))
        if containers.contains(where: { !$0.quotaGiven }) {
            lines.append("* derived from recent use: \(DevicePlanner.reservePercent)% of the space caches could have, "
                         + "shared by use (see docs/DESIGN.md)")
        }
        return lines.joined(separator: "\n")
    }

    public var json: JSONValue {
        .object([
            ("device", .string(name)),
            ("policy", .string(policy.rawValue)),
            ("simulated", .bool(simulated)),
            ("capacity", .integer(capacity)),
            ("external", .integer(external)),
            ("used", .integer(used)),
            ("available", .integer(available)),
            ("purgeable", .integer(purgeable)),
            ("containers", .array(containers.map { container in
                .object([
                    ("container", .string(container.container)),
                    ("mountpoint", .string(container.mountpoint)),
                    ("pid", .integer(Int(container.processID))),
                    ("size", .integer(container.used)),
                    ("logical_size", .integer(container.size)),
                    ("purgeable", .integer(container.purgeable)),
                    ("quota", .integer(container.quota)),
                    ("quota_given", .bool(container.quotaGiven)),
                    ("last_use", .integer(container.lastUse)),
                ])
            })),
        ])
    }
}
