import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// The libfuse low-level operations table. Each entry is a non-capturing
/// closure that recovers the filesystem from the session's user data, calls
/// the matching `ContainerFileSystem` method and sends exactly one reply
/// (none for forget). Operations left unset answer `ENOSYS` from libfuse.
enum Operations {
    static func table() -> fuse_lowlevel_ops {
        var ops = fuse_lowlevel_ops()
        ops.`init` = { userdata, connection in
            Operations.filesystem(userdata).initialize(connection!)
        }
        ops.lookup = { request, parent, name in
            Operations.replying(request, "lookup", .init(.lookup), .entry(parent, name!)) { fs throws(Errno) in
                var entry = try fs.lookup(parent: NodeID(parent), name: name!)
                fuse_reply_entry(request, &entry)
            }
        }
        ops.forget = { request, id, count in
            Operations.watching(request, "forget") { fs in
                fs.forget(NodeID(id), count: count)
                fuse_reply_none(request)
            }
        }
        ops.forget_multi = { request, count, items in
            Operations.watching(request, "forget_multi") { fs in
                for item in UnsafeBufferPointer(start: items, count: count) {
                    fs.forget(NodeID(item.ino), count: item.nlookup)
                }
                fuse_reply_none(request)
            }
        }
        ops.getattr = { request, id, _ in
            Operations.replying(request, "getattr", .init(.getattr), .node(id)) { fs throws(Errno) in
                var status = try fs.attributes(of: NodeID(id))
                fuse_reply_attr(request, &status, fs.timeouts.attributes)
            }
        }
        ops.setattr = { request, id, attributes, fields, info in
            Operations.replying(request, "setattr", .setattr(fields), .node(id), file: info.map(OpenFile.from)) { fs throws(Errno) in
                var status = try fs.setAttributes(
                    of: NodeID(id), to: attributes!.pointee, changing: fields, handle: info.map(OpenFile.from),
                    caller: CallerIdentity(request!))
                fuse_reply_attr(request, &status, fs.timeouts.attributes)
            }
        }
        ops.readlink = { request, id in
            Operations.replying(request, "readlink", .init(.readlink), .node(id)) { fs throws(Errno) in
                let target = try fs.readSymbolicLink(NodeID(id))
                fuse_reply_readlink(request, target)
            }
        }
        ops.mknod = { request, parent, name, mode, device in
            Operations.replying(request, "mknod", .init(.mknod), .entry(parent, name!)) { fs throws(Errno) in
                var entry = try fs.makeNode(
                    parent: NodeID(parent), name: name!, mode: mode, device: device, caller: CallerIdentity(request!))
                fuse_reply_entry(request, &entry)
            }
        }
        ops.mkdir = { request, parent, name, mode in
            Operations.replying(request, "mkdir", .init(.mkdir), .entry(parent, name!)) { fs throws(Errno) in
                var entry = try fs.makeDirectory(parent: NodeID(parent), name: name!, mode: mode, caller: CallerIdentity(request!))
                fuse_reply_entry(request, &entry)
            }
        }
        ops.symlink = { request, target, parent, name in
            Operations.replying(request, "symlink", .init(.symlink), .entry(parent, name!)) { fs throws(Errno) in
                var entry = try fs.makeSymbolicLink(
                    parent: NodeID(parent), name: name!, target: target!, caller: CallerIdentity(request!))
                fuse_reply_entry(request, &entry)
            }
        }
        ops.link = { request, id, parent, name in
            Operations.replying(request, "link", .init(.link), .entry(parent, name!)) { fs throws(Errno) in
                var entry = try fs.makeHardLink(to: NodeID(id), parent: NodeID(parent), name: name!)
                fuse_reply_entry(request, &entry)
            }
        }
        ops.unlink = { request, parent, name in
            Operations.replying(request, "unlink", .init(.unlink), .entry(parent, name!)) { fs throws(Errno) in
                try fs.unlink(parent: NodeID(parent), name: name!, directory: false)
                fuse_reply_err(request, 0)
            }
        }
        ops.rmdir = { request, parent, name in
            Operations.replying(request, "rmdir", .init(.rmdir), .entry(parent, name!)) { fs throws(Errno) in
                try fs.unlink(parent: NodeID(parent), name: name!, directory: true)
                fuse_reply_err(request, 0)
            }
        }
        ops.rename = { request, parent, name, newParent, newName, flags in
            Operations.replying(request, "rename", .init(.rename), .entry(parent, name!)) { fs throws(Errno) in
                try fs.rename(parent: NodeID(parent), name: name!, newParent: NodeID(newParent), newName: newName!, flags: flags)
                fuse_reply_err(request, 0)
            }
        }
        FileOperations.install(into: &ops)
        DirectoryOperations.install(into: &ops)
        AttributeOperations.install(into: &ops)
        return ops
    }

    /// The filesystem behind a request.
    static func filesystem(_ request: fuse_req_t?) -> ContainerFileSystem {
        filesystem(fuse_req_userdata(request))
    }

    static func filesystem(_ userdata: UnsafeMutableRawPointer?) -> ContainerFileSystem {
        Unmanaged<ContainerFileSystem>.fromOpaque(userdata!).takeUnretainedValue()
    }

    /// Runs `body`, which replies on success; a thrown errno becomes the one reply instead.
    /// The request is known to the watchdog until then.
    @inline(__always)
    static func replying(_ request: fuse_req_t?, _ operation: StaticString, _ body: (ContainerFileSystem) throws(Errno) -> Void) {
        watching(request, operation) { fs in
            do throws(Errno) {
                try body(fs)
            } catch {
                if error == .noSpace { fs.noSpaceReplies.note() }
                if error == .tooManyOpenFiles || error == .tooManyOpenFilesInSystem { fs.noteOutOfDescriptors(error) }
                fuse_reply_err(request, error.rawValue)
            }
        }
    }

    /// Runs `body`, which replies, with the request known to the watchdog
    /// until then (for handlers that send their own replies, as `read`).
    @inline(__always)
    static func watching(_ request: fuse_req_t?, _ operation: StaticString, _ body: (ContainerFileSystem) -> Void) {
        let fs = filesystem(request)
        let key = UInt(bitPattern: request)
        fs.watchdog.begin(key, operation, caller: fuse_req_ctx(request).pointee.pid)
        defer { fs.watchdog.end(key) }
        body(fs)
    }

    /// `replying`, after the interceptors have seen the request (`intercept`):
    /// `call` is the operation as fault rules name it, `target` the node or
    /// name it is about, `file` an open file it works through besides the
    /// target's (setattr's handle, copy_file_range's source is `source`).
    @inline(__always)
    static func replying(
        _ request: fuse_req_t?, _ operation: StaticString, _ call: FaultCallOperations, _ target: RequestTarget,
        file: OpenFile? = nil, source: OpenFile? = nil, _ body: (ContainerFileSystem) throws(Errno) -> Void
    ) {
        replying(request, operation) { fs throws(Errno) in
            if case .fail(let errno) = intercept(fs, InterceptedRequest(request, call, target, file: file, source: source)) { throw errno }
            try body(fs)
        }
    }

    /// The one place requests meet the interceptors registered at mount
    /// (fault rules, the crash era), at their start, before any lock.
    @inline(__always)
    static func intercept(_ fs: ContainerFileSystem, _ request: InterceptedRequest) -> Interception {
        fs.interceptors.intercept(request)
    }
}
