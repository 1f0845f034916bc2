import PurgeCore
import PurgeSys

extension VirtualAttributes {
    /// The root's `device_*` attributes: the shared device's totals, or
    /// this container's alone on a device of its own.
    func deviceValue(of attribute: PurgeAttribute) throws(Errno) -> String {
        let state = filesystem.state
        let device = filesystem.device
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
