import PurgeCore
import PurgeEngines
import PurgeSys

/// The device scope of `purgefs metrics --prometheus` on a mount of a shared
/// device (`device=`): the device's figures, labelled `device`, as every
/// member's root answers them (`user.purgefs.device_*`), and this
/// container's cache quota on it, labelled `device` and `container`.
extension PrometheusText {
    struct DeviceFigures: Equatable {
        var name: String
        var capacity: UInt64
        var used: UInt64
        var available: UInt64
        var purgeable: UInt64
        var containers: UInt64
        var containersUsed: UInt64
        var quota: UInt64
    }

    /// The device's figures from the root `mountpoint`, or nil when it is on
    /// a device of its own.
    static func deviceFigures(mountpoint: String, _ access: AttributeAccess) throws(CommandExit) -> DeviceFigures? {
        guard let name = try? access.read(PurgeAttribute.deviceName.fullName, mountpoint) else { return nil }
        return DeviceFigures(
            name: String(decoding: name, as: UTF8.self),
            capacity: try access.number(.capacity, of: mountpoint),
            used: try access.number(.deviceUsed, of: mountpoint),
            available: try access.number(.available, of: mountpoint),
            purgeable: try access.number(.devicePurgeable, of: mountpoint),
            containers: try access.number(.deviceContainers, of: mountpoint),
            containersUsed: try access.number(.deviceContainersUsed, of: mountpoint),
            quota: try access.number(.deviceQuota, of: mountpoint))
    }

    static func deviceText(_ device: DeviceFigures, container: String) -> String {
        let labels = "{device=\"\(escaped(device.name))\"}"
        let metrics: [(String, String, UInt64, String)] = [
            ("purgefs_device_capacity_bytes", "Size of the shared device.", device.capacity, labels),
            ("purgefs_device_used_bytes", "Bytes in use on the shared device, external use included.", device.used, labels),
            ("purgefs_device_available_bytes", "Available space on the shared device.", device.available, labels),
            ("purgefs_device_purgeable_bytes", "Bytes purging could free across the device's containers.", device.purgeable, labels),
            ("purgefs_device_containers", "Containers mounted on the shared device.", device.containers, labels),
            ("purgefs_device_containers_used_bytes", "Bytes on disk of the device's containers, summed.", device.containersUsed, labels),
            ("purgefs_device_cache_quota_bytes", "This container's cache quota on the shared device.", device.quota,
             "{device=\"\(escaped(device.name))\",container=\"\(escaped(container))\"}"),
        ]
        return metrics.flatMap { name, help, value, labels in
            ["# HELP \(name) \(help)", "# TYPE \(name) gauge", "\(name)\(labels) \(value)"]
        }.joined(separator: "\n")
    }
}
