import CLinux
import CFuse
import Glibc
import PurgeCore
import PurgeSys

/// The entries of the operations table for open files.
enum FileOperations {
    static func install(into ops: inout fuse_lowlevel_ops) {
        ops.open = { request, id, info in
            Operations.replying(request, "open", .init(.open), .node(id)) { fs throws(Errno) in
                let file = try fs.open(NodeID(id), flags: info!.pointee.flags)
                try fs.clearSetIDAfterTruncating(file, flags: info!.pointee.flags, caller: CallerIdentity(request!))
                fs.describe(file, opened: info!.pointee.flags, in: info!)
                fs.handOver(file, in: info!) { fs.replyOpen(request, file, flags: info!.pointee.flags, info: info!) }
            }
        }
        ops.create = { request, parent, name, mode, info in
            Operations.replying(request, "create", .init(.create), .entry(parent, name!)) { fs throws(Errno) in
                var (entry, file) = try fs.create(
                    parent: NodeID(parent), name: name!, mode: mode, flags: info!.pointee.flags,
                    caller: CallerIdentity(request!))
                try fs.clearSetIDAfterTruncating(file, flags: info!.pointee.flags, caller: CallerIdentity(request!))
                fs.describe(file, opened: info!.pointee.flags, in: info!)
                _ = fs.kernelPassthrough.admit(file, flags: info!.pointee.flags, eligible: false, backing: file.inode.backing)
                fs.handOver(file, in: info!) { fuse_reply_create(request, &entry, info) }
            }
        }
        ops.read = { request, _, size, offset, info in
            Operations.watching(request, "read") { fs in
                if case .fail(let errno) = Operations.intercept(fs, InterceptedRequest(request, .init(.read), .file(info!))) {
                    fuse_reply_err(request, errno.rawValue)
                    return
                }
                let file = OpenFile.from(info!)
                fs.read(file)
                // A file whose backing file lacks some of its bytes: read through its view.
                let view: (any DataView)?
                do throws(Errno) { view = try fs.dataViews.view(of: file.inode.key) } catch {
                    fuse_reply_err(request, error.rawValue)
                    return
                }
                if let view {
                    FileOperations.replyThroughView(request, view, size: size, offset: offset)
                    return
                }
                if fs.dataViews.readsShared(file.inode),
                   FileOperations.replyReadingShared(request, fs.dataViews, file, size: size, offset: offset) {
                    return
                }
                // A ring thread reads any read straight into its entry: one copy, as a splice would cost.
                if size <= FileOperations.copiedReadLimit || clinux_fuse_ring_reply_area(size) != nil {
                    FileOperations.replyCopied(request, file.descriptor, size: size, offset: offset)
                    return
                }
                // Spliced from the backing file to the kernel where possible: no copy through userspace.
                var data = cfuse_bufvec_fd(file.descriptor.rawValue, size, offset)
                fuse_reply_data(request, &data, FUSE_BUF_SPLICE_MOVE)
            }
        }
        ops.write_buf = { request, _, data, offset, info in
            Operations.replying(request, "write_buf") { fs throws(Errno) in
                let file = OpenFile.from(info!)
                let interception = Operations.intercept(fs, InterceptedRequest(request, .init(.write), .file(info!)))
                if case .fail(let errno) = interception { throw errno }
                // Before the data, as the kernel's own write does.
                try fs.clearSetIDIfAsked(file.inode, caller: CallerIdentity(request!), notifying: true)
                let written: Int
                if case .transform(let transform) = interception {
                    written = try transform.write(data!) { (part) throws(Errno) in try fs.write(file, part, at: offset) }
                } else {
                    written = try fs.write(file, data!, at: offset)
                }
                fuse_reply_write(request, written)
            }
        }
        ops.flush = { request, _, info in
            Operations.replying(request, "flush", .init(.flush), .file(info!)) { fs throws(Errno) in
                try fs.flush(FileOperations.handle(info!))
                fuse_reply_err(request, 0)
            }
        }
        ops.release = { request, _, info in
            Operations.watching(request, "release") { fs in
                fs.releasePassthrough(OpenFile.from(info!))
                fs.release(OpenFile.from(info!))
                OpenFile.detach(from: info!)
                fuse_reply_err(request, 0)
            }
        }
        ops.fsync = { request, _, dataOnly, info in
            Operations.replying(request, "fsync", dataOnly != 0 ? .init(.fdatasync, also: .fsync) : .init(.fsync), .file(info!)) { fs throws(Errno) in
                try fs.sync(OpenFile.from(info!), dataOnly: dataOnly != 0)
                fuse_reply_err(request, 0)
            }
        }
        ops.fallocate = { request, _, mode, offset, length, info in
            Operations.replying(request, "fallocate", .init(.fallocate), .file(info!)) { fs throws(Errno) in
                try fs.allocate(OpenFile.from(info!), mode: mode, offset: Int64(offset), length: Int64(length))
                fuse_reply_err(request, 0)
            }
        }
        ops.lseek = { request, _, offset, whence, info in
            Operations.replying(request, "lseek", .init(.lseek), .file(info!)) { fs throws(Errno) in
                let position = try fs.seek(OpenFile.from(info!), offset: Int64(offset), whence: whence)
                fuse_reply_lseek(request, off_t(position))
            }
        }
        ops.copy_file_range = { request, _, sourceOffset, sourceInfo, _, offset, info, length, flags in
            Operations.replying(
                request, "copy_file_range", .init(.copyFileRange), .file(info!), source: OpenFile.from(sourceInfo!)
            ) { fs throws(Errno) in
                let copied = try fs.copyRange(
                    from: OpenFile.from(sourceInfo!), at: Int64(sourceOffset), to: OpenFile.from(info!),
                    at: Int64(offset), length: length, flags: UInt32(flags))
                fuse_reply_write(request, copied)
            }
        }
    }
}

extension FileOperations {
    /// Reads up to this size are copied through the daemon (`pread`, then
    /// one `writev` of the reply); larger ones are spliced. A splice costs
    /// three calls (`vmsplice` of the header, file to pipe, pipe to the
    /// connection), which a database's 8 KiB reads pay for nothing: a
    /// copy of a few pages is cheaper than two extra system calls.
    static let copiedReadLimit = 32 * 1024

    static func replyCopied(_ request: fuse_req_t?, _ descriptor: FileDescriptor, size: Int, offset: off_t) {
        withReadBuffer(size: size) { buffer in replyRead(request, descriptor, into: buffer, offset: offset) }
    }

    /// Replies to a read of a file with a data view with what the view reads.
    static func replyThroughView(_ request: fuse_req_t?, _ view: any DataView, size: Int, offset: off_t) {
        withReadBuffer(size: size) { buffer in
            do throws(Errno) {
                guard offset >= 0 else { throw Errno.invalidArgument }
                let count = try view.read(into: buffer, at: UInt64(offset))
                fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), count)
            } catch {
                fuse_reply_err(request, error.rawValue)
            }
        }
    }

    /// Replies to a read of a file that reads data another file changes in
    /// place (a linked clone) with what it read under `views`' guard,
    /// copied: the reply is sent after the guard is let go. False, nothing
    /// sent, when the file shares nothing any more.
    static func replyReadingShared(_ request: fuse_req_t?, _ views: any DataViews, _ file: OpenFile, size: Int, offset: off_t) -> Bool {
        withReadBuffer(size: size) { buffer in
            do throws(Errno) {
                let read = try views.readingShared(file) { (descriptor) throws(Errno) -> Int in
                    try descriptor.read(into: buffer, at: Int64(offset))
                }
                guard let count = read else { return false }
                fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), count)
            } catch {
                fuse_reply_err(request, error.rawValue)
            }
            return true
        }
    }

    /// Runs `body` with `size` bytes to read into: the ring's reply entry
    /// when the request came through the ring (one copy, as a splice would
    /// cost), else an aligned buffer of its own.
    private static func withReadBuffer<R>(size: Int, _ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        if let area = clinux_fuse_ring_reply_area(size) { return body(UnsafeMutableRawBufferPointer(start: area, count: size)) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(size, 1), alignment: 4096)
        defer { buffer.deallocate() }
        return body(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<size]))
    }

    /// Reads into `buffer` and replies with what was read.
    private static func replyRead(_ request: fuse_req_t?, _ descriptor: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, offset: off_t) {
        do throws(Errno) {
            let count = try descriptor.read(into: buffer, at: Int64(offset))
            fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), count)
        } catch {
            fuse_reply_err(request, error.rawValue)
        }
    }

    static func handle(_ info: UnsafeMutablePointer<fuse_file_info>) -> FileDescriptor {
        OpenFile.from(info).descriptor
    }
}

extension ContainerFileSystem {
    /// Hands `file`, announced open, to the kernel: `reply` is the
    /// `fuse_reply_open`/`fuse_reply_create` call on `info` (filled by
    /// `describe`), returning its result. When the reply fails (the caller
    /// was interrupted: the kernel expects no answer), the kernel never
    /// holds the file and never releases it, so it is given up here as a
    /// release would: out of passthrough, announced closed (once), and the
    /// kernel's reference dropped.
    func handOver(_ file: OpenFile, in info: UnsafeMutablePointer<fuse_file_info>, reply: () -> Int32) {
        guard reply() != 0 else { return }
        kernelPassthrough.release(file)
        release(file)
        OpenFile.detach(from: info)
    }

    /// Fills the reply's file info: the handle, and how the kernel may cache.
    func describe(_ file: OpenFile, opened flags: Int32, in info: UnsafeMutablePointer<fuse_file_info>) {
        file.attach(to: info)
        // O_DIRECT is honoured by the kernel's direct I/O. A write-only open
        // gets it too: its writes then go from the writer's pages to the
        // daemon without a copy into a page cache nobody can read through
        // this descriptor (nor map: mmap needs read access), a third of a
        // large write's copying. Others' cached pages are dropped at this
        // open (no keep_cache below), so no reader sees stale data.
        let direct = flags & OpenFlags.direct != 0 || flags & O_ACCMODE == O_WRONLY
        cfuse_fi_set_direct_io(info, direct ? 1 : 0)
        // Only the mount changes the data, so the page cache survives reopening;
        // but a file whose reads a fault rule could fail must reach us (and its cache is dropped now).
        cfuse_fi_set_keep_cache(info, direct || serving.mustSeeReads(of: file.inode) ? 0 : 1)
        // A read-only file's close has nothing to flush (the daemon's flush
        // closes a duplicate of its descriptor, as a native close would):
        // the kernel skips the round trip, a third of a small file's
        // open, read and close, unless a flush rule could match it now.
        cfuse_fi_set_noflush(info, flags & O_ACCMODE == O_RDONLY && !serving.mustSeeFlush(of: file.inode) ? 1 : 0)
    }
}
