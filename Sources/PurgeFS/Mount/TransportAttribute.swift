import PurgeCore
import PurgeSys

/// The root's `user.purgefs.transport`: how requests reach the daemon (`KernelWire.transport`).
struct TransportAttribute: AttributeProvider {
    var attributes: [PurgeAttribute] { [.transport] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String { KernelWire.transport }
}
