import CFuse
import Dispatch
import Synchronization

/// Tells the kernel about changes purgefs makes on its own (purges,
/// truncations), so no stale name or page survives in its caches.
///
/// Notices are sent from a queue of their own, never from the thread that
/// made the change: the kernel handles a notice by taking the directory's
/// lock, which a request waiting on us may hold.
final class KernelNotifier: Sendable {
    enum Notice: Sendable {
        /// A name in `parent` is gone (`child` is the node it named, if the kernel knows it).
        case deleted(parent: NodeID, child: NodeID?, name: [CChar])
        /// The data of a node changed behind the kernel's back.
        case dataChanged(NodeID)
    }

    private let queue = DispatchQueue(label: "purgefs.kernel-notifier")
    /// The live session, or nil before INIT and after shutdown.
    private let session = Mutex<SessionPointer?>(nil)

    struct SessionPointer: @unchecked Sendable {
        let raw: OpaquePointer
    }

    func attach(_ session: OpaquePointer) {
        self.session.withLock { $0 = SessionPointer(raw: session) }
    }

    /// Stops sending and waits for notices in flight: the session is about to go.
    func detach() {
        session.withLock { $0 = nil }
        queue.sync {}
    }

    func send(_ notice: Notice) {
        queue.async { [self] in
            session.withLock { session in
                guard let session else { return }
                deliver(notice, through: session.raw)
            }
        }
    }

    /// Drops the kernel's cached attributes of `node`, before returning: it
    /// takes no lock a request may hold (no pages are invalidated), so it is
    /// safe from inside a request on that very node.
    func invalidateAttributes(of node: NodeID) {
        session.withLock { session in
            guard let session else { return }
            _ = fuse_lowlevel_notify_inval_inode(session.raw, node.rawValue, -1, 0)
        }
    }

    private func deliver(_ notice: Notice, through session: OpaquePointer) {
        switch notice {
        case .deleted(let parent, let child, let name):
            name.withUnsafeBufferPointer { buffer in
                let length = buffer.count - 1  // without the NUL
                if let child {
                    _ = fuse_lowlevel_notify_delete(session, parent.rawValue, child.rawValue, buffer.baseAddress, length)
                } else {
                    _ = fuse_lowlevel_notify_inval_entry(session, parent.rawValue, buffer.baseAddress, length)
                }
            }
        case .dataChanged(let node):
            _ = fuse_lowlevel_notify_inval_inode(session, node.rawValue, 0, 0)
        }
    }
}
