import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// Fault rules as a request interceptor: the path a rule sees, the check,
/// and the short write as a transform of the write's data.
/// Without rules one atomic load a request (`FaultInjector.isArmed`).
struct FaultAdmission: RequestInterceptor {
    let faults: FaultInjector
    /// Looks a node up, for the path a rule sees.
    let inodes: InodeTable

    func intercept(_ request: InterceptedRequest) -> Interception {
        guard faults.isArmed else { return .proceed }
        // Requests for `user.purgefs.*` names are never faulted, so
        // `purgefs fault clear` and the figures always get through.
        if case .attribute(_, let name) = request.target, PurgeAttribute.parse(name) != .foreign { return .proceed }
        switch faults.admit(request.request, request.call, path: { path(of: request.target) }) {
        case .proceed: return .proceed
        case .fail(let errno): return .fail(errno)
        case .shortWrite(let firing, let call): return .transform(ShortWrite(faults: faults, firing: firing, call: call))
        }
    }

    /// The target's path relative to the container, the root empty.
    func path(of target: RequestTarget) -> String {
        switch target {
        case .node(let id), .attribute(let id, _):
            return faults.relativePath(of: inodes.inode(NodeID(id)))
        case .entry(let parent, let name):
            let directory = faults.relativePath(of: inodes.inode(NodeID(parent)))
            let leaf = String(cString: name)
            return directory.isEmpty ? leaf : directory + "/" + leaf
        case .file(let info):
            return faults.relativePath(of: OpenFile.from(info).inode)
        }
    }
}

/// A short write: takes all of the data from the kernel (a spliced pipe
/// must be emptied), writes the first half of it (at least one byte)
/// through the handler's write, as any write, and returns the count written.
struct ShortWrite: WriteTransform {
    let faults: FaultInjector
    let firing: FaultFiring
    let call: FaultCall

    func write(
        _ data: UnsafeMutablePointer<fuse_bufvec>, through write: (UnsafeMutablePointer<fuse_bufvec>) throws(Errno) -> Int
    ) throws(Errno) -> Int {
        try WriteData.copied(data) { (buffer, copied) throws(Errno) -> Int in
            var part = cfuse_bufvec_mem(buffer, max(copied / 2, min(copied, 1)))
            let written = try write(&part)
            faults.noteShortWrite(firing, call, wrote: written, of: copied)
            return written
        }
    }
}
