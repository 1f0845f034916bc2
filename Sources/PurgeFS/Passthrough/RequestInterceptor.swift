import CFuse
import PurgeCore
import PurgeSys

/// What a request is about, as its handler was given it: resolved to a path
/// only when an interceptor needs one (a fault rule could match).
enum RequestTarget {
    /// A node: its own path.
    case node(fuse_ino_t)
    /// A name in a directory (lookup, create, mkdir, unlink, rename's source, link's new name, ...).
    case entry(fuse_ino_t, CName)
    /// An open file (read, write, fsync, ...).
    case file(UnsafeMutablePointer<fuse_file_info>)
    /// A node's extended attribute.
    case attribute(fuse_ino_t, CName)
}

/// A request as interceptors see it, before its handler runs.
struct InterceptedRequest {
    let request: fuse_req_t?
    /// The operation, as fault rules name it.
    let call: FaultCallOperations
    let target: RequestTarget
    /// The open file it works through: the target's, or setattr's handle.
    let file: OpenFile?
    /// `copy_file_range`'s source.
    let source: OpenFile?

    init(_ request: fuse_req_t?, _ call: FaultCallOperations, _ target: RequestTarget, file: OpenFile? = nil, source: OpenFile? = nil) {
        self.request = request
        self.call = call
        self.target = target
        if let file {
            self.file = file
        } else if case .file(let info) = target {
            self.file = OpenFile.from(info)
        } else {
            self.file = nil
        }
        self.source = source
    }
}

/// Writes a request's data in its own way (a fault rule's short write):
/// `write` is the handler's write of a buffer, returning the count written.
protocol WriteTransform {
    func write(
        _ data: UnsafeMutablePointer<fuse_bufvec>, through write: (UnsafeMutablePointer<fuse_bufvec>) throws(Errno) -> Int
    ) throws(Errno) -> Int
}

/// What an interceptor makes of a request.
enum Interception {
    case proceed
    /// Answer it with this errno; the handler does not run.
    case fail(Errno)
    /// A write's data goes through this transform (other requests proceed).
    case transform(any WriteTransform)
}

/// A feature that sees every request before its handler (NIO's inbound
/// handler): it may admit it, delay it (never waiting on another request),
/// fail it, or transform a write's data. Registered at mount; called by the
/// handler core in one place a request (`Operations.intercept`), before
/// any lock is taken.
protocol RequestInterceptor: Sendable {
    func intercept(_ request: InterceptedRequest) -> Interception
}

/// The mount's interceptors, in order: the first that fails a request
/// answers it; a transform is carried to the write.
struct RequestInterceptors: Sendable {
    let interceptors: [any RequestInterceptor]

    init(_ interceptors: [any RequestInterceptor]) {
        self.interceptors = interceptors
    }

    func intercept(_ request: InterceptedRequest) -> Interception {
        var outcome = Interception.proceed
        // By index: each is asked where it is stored, not copied out of the
        // array first (a copy of an existential, retained and destroyed, at
        // every request).
        for index in interceptors.indices {
            switch interceptors[index].intercept(request) {
            case .proceed: continue
            case .fail(let errno): return .fail(errno)
            case .transform(let transform): outcome = .transform(transform)
            }
        }
        return outcome
    }
}

extension FaultCallOperations {
    /// A `setattr` that changes the size is a `truncate` too.
    static func setattr(_ fields: Int32) -> FaultCallOperations {
        fields & FUSE_SET_ATTR_SIZE != 0 ? .init(.truncate, also: .setattr) : .init(.setattr)
    }
}
