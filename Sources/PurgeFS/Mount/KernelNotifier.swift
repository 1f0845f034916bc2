import Dispatch
import PurgeSys
import Synchronization

/// Tells the kernel about changes purgefs makes on its own (purges,
/// truncations, documents arriving from the remote), so no stale name or
/// page survives in its caches.
///
/// The kernel handles an entry notice by taking the directory's lock, which
/// a request waiting on us may hold; a data notice takes page locks that a
/// read in flight holds. So notices go through one queue and one thread that
/// holds nothing while it is in the kernel: it may wait there for a handler
/// to finish, but no handler, purger, monitor or cloud worker ever waits for
/// it (`send` only enqueues). Notices are written to a descriptor of our own
/// on the connection, never through the libfuse session, so shutdown neither
/// waits for a notice nor frees anything a notice in flight uses. A notice
/// the kernel refuses (the node or name is no longer known) is dropped.
///
/// Lock order: `state` is a leaf, held only to move notices in and out.
final class KernelNotifier: Sendable {
    enum Notice: Sendable {
        /// A name in `parent` is gone (`child` is the node it named, if the kernel knows it).
        case deleted(parent: NodeID, child: NodeID?, name: [CChar])
        /// The data of a node changed behind the kernel's back.
        case dataChanged(NodeID)
    }

    /// More notices than this waiting are dropped (and counted): the purger
    /// must never wait for the kernel. Entries then expire by their timeout.
    static let capacity = 1 << 18

    private struct State {
        var pending: [Notice] = []
        /// Our descriptor on the connection, or -1 before `attach`.
        var device: Int32 = -1
        /// Threads writing to `device` now (the sender, and handlers in `invalidateAttributes`).
        var writers = 0
        var stopped = false
        var dropped: UInt64 = 0
    }

    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)

    /// Starts sending through `device` (taken over: a duplicate of the session's).
    func attach(_ device: FileDescriptor) {
        state.withLock { $0.device = device.rawValue }
        DispatchQueue(label: "purgefs.kernel-notifier").async { [self] in run() }
    }

    /// Stops sending without waiting: pending notices are dropped, and a
    /// notice in flight finishes (or fails) on its own. The descriptor is
    /// closed by whoever writes on it last.
    func detach() {
        let closing: Int32? = state.withLock { state in
            state.stopped = true
            state.pending = []
            guard state.writers == 0 else { return nil }
            defer { state.device = -1 }
            return state.device
        }
        if let closing, closing >= 0 { FileDescriptor(rawValue: closing).closeQuietly() }
        wake.signal()
    }

    func send(_ notice: Notice) {
        let queued = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            guard state.pending.count < Self.capacity else {
                state.dropped += 1
                if state.dropped == 1 { Diagnostics.note("kernel notices are dropped: more than \(Self.capacity) wait") }
                return false
            }
            state.pending.append(notice)
            return true
        }
        if queued { wake.signal() }
    }

    /// Drops the kernel's cached attributes of `node` before returning. It
    /// takes no lock in the kernel that a request may hold (no pages, no
    /// directory), so it is safe from inside a request on that very node.
    func invalidateAttributes(of node: NodeID) {
        guard let device = beginWriting() else { return }
        defer { endWriting() }
        try? device.notifyNodeChanged(node.rawValue, pages: false)
    }

    private func run() {
        while true {
            wake.wait()
            while true {
                let batch: [Notice] = state.withLock { state in
                    defer { state.pending = [] }
                    return state.stopped ? [] : state.pending
                }
                if batch.isEmpty { break }
                for notice in batch {
                    guard let device = beginWriting() else { return }
                    deliver(notice, through: device)
                    endWriting()
                }
            }
            if state.withLock({ $0.stopped }) { return }
        }
    }

    private func beginWriting() -> FileDescriptor? {
        state.withLock { state in
            guard !state.stopped, state.device >= 0 else { return nil }
            state.writers += 1
            return FileDescriptor(rawValue: state.device)
        }
    }

    private func endWriting() {
        let closing: Int32? = state.withLock { state in
            state.writers -= 1
            guard state.stopped, state.writers == 0, state.device >= 0 else { return nil }
            defer { state.device = -1 }
            return state.device
        }
        if let closing { FileDescriptor(rawValue: closing).closeQuietly() }
    }

    private func deliver(_ notice: Notice, through device: FileDescriptor) {
        switch notice {
        case .deleted(let parent, let child, let name):
            name.withUnsafeBufferPointer { buffer in
                // Without the NUL.
                let bytes = UnsafeBufferPointer(rebasing: buffer[..<(buffer.count - 1)])
                try? device.notifyEntryGone(parent: parent.rawValue, child: child?.rawValue, name: bytes)
            }
        case .dataChanged(let node):
            try? device.notifyNodeChanged(node.rawValue, pages: true)
        }
    }
}
