import PurgeCore
import PurgeSys

/// The root's `device_*` names: the shared device's totals (`device=`), or
/// this container's alone on a device of its own.
struct DeviceAttributes: AttributeProvider {
    let state: ContainerState
    let device: SharedDevice?

    var attributes: [PurgeAttribute] { [.deviceName, .deviceContainers, .deviceContainersUsed, .devicePurgeable, .deviceQuota] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        switch attribute {
        case .deviceName:
            guard let device else { throw Errno.noData }
            return device.directory.name
        case .devicePurgeable:
            return String(state.status().purgeable)
        case .deviceContainers, .deviceContainersUsed, .deviceQuota:
            let figures = device?.figures(state) ?? (containers: 1, used: state.status().containerUsed, quota: 0)
            switch attribute {
            case .deviceContainers: return String(figures.containers)
            case .deviceContainersUsed: return String(figures.used)
            default: return String(figures.quota)
            }
        default:
            throw Errno.noData
        }
    }
}
