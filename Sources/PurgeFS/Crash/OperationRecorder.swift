import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// The writing side of the operation log of a mount with `record=DIR`
/// (`OperationLog` is the reading side, through which `purgefs explore`
/// replays it): every change to the container's data and names, and every
/// sync, one `RecordedOperation` a line in `DIR/operations`, in the order
/// the handlers made them; the bytes a change left in a file are read back
/// after it (`changedData`) and appended to `DIR/data`.
///
/// The command's stdout is a FIFO, `DIR/output`, that explore made and holds
/// open: before each operation is logged, what is waiting in it is logged as
/// `output` first. A command that printed and then made its next change has
/// its line logged before that change, exactly.
///
/// `lock` is held across the read-back of one change's bytes and the two
/// appends: the handlers of other changes wait for it, bounded by that
/// change's size; nothing else of ours is taken under it but `Inode`'s leaf
/// locks (DESIGN "Who may wait for whom").
final class OperationRecorder: FileSystemObserver, Sendable {
    private struct Log: Sendable {
        let operations: FileDescriptor
        let data: FileDescriptor
        let output: FileDescriptor?
        var dataLength: UInt64 = 0
        var failed = false
    }

    private let log: Mutex<Log>
    private let inodes: InodeTable

    /// Opens the log in `directory` (made by the caller), emptied.
    init(directory: String, inodes: InodeTable) throws(Errno) {
        self.inodes = inodes
        let operations = try FileDescriptor.open(path: directory + "/" + RecordedOperation.operationsFileName,
                                                 flags: O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, mode: 0o600)
        let data = try FileDescriptor.open(path: directory + "/" + RecordedOperation.dataFileName,
                                           flags: O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode: 0o600)
        // Without a FIFO there is no output to order.
        let output = try? FileDescriptor.open(path: directory + "/" + RecordedOperation.outputFileName, flags: O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        log = Mutex(Log(operations: operations, data: data, output: output))
    }

    // MARK: Writing the log

    /// Appends `record` (after what the command printed since the last one).
    private func append(_ make: (inout Log) throws(Errno) -> RecordedOperation?) {
        log.withLock { log in
            guard !log.failed else { return }
            do throws(Errno) {
                try drainOutput(&log)
                guard let record = try make(&log) else { return }
                try log.operations.writeAll(record.line + "\n")
            } catch {
                log.failed = true
                Diagnostics.note("record: the operation log stops here: \(error)")
            }
        }
    }

    /// Logs what waits in the output FIFO as one `output` record.
    private func drainOutput(_ log: inout Log) throws(Errno) {
        guard let output = log.output else { return }
        let start = log.dataLength
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do throws(Errno) {
                count = try output.read(into: buffer)
            } catch {
                if error == .tryAgain { break }
                throw error
            }
            if count == 0 { break }
            var written = 0
            while written < count {
                written += try log.data.write(UnsafeRawBufferPointer(rebasing: buffer[written..<count]), at: Int64(log.dataLength) + Int64(written))
            }
            log.dataLength += UInt64(count)
        }
        if log.dataLength > start {
            try log.operations.writeAll(RecordedOperation.output(data: start, length: log.dataLength - start).line + "\n")
        }
    }

    /// Appends `length` bytes of `inode` at `offset` (fewer where it ends)
    /// to the data file; returns where they went and how many there are.
    private func copy(_ inode: Inode, offset: UInt64, length: UInt64, into log: inout Log) throws(Errno) -> (UInt64, UInt64) {
        let source = try inode.withDescriptor { (file) throws(Errno) in try file.reopen(flags: O_RDONLY) }
        defer { source.closeQuietly() }
        let size = UInt64(max(0, try source.status().st_size))
        let end = min(size, offset &+ length < offset ? UInt64.max : offset + length)
        let count = end > offset ? end - offset : 0
        let at = log.dataLength
        if count > 0 { try CrashRecorder.copy([(from: offset, to: at, length: count)], from: source, to: log.data) }
        log.dataLength += count
        return (at, count)
    }

    private func size(of inode: Inode) throws(Errno) -> UInt64 {
        UInt64(max(0, try inode.withDescriptor { (file) throws(Errno) in try file.status() }.st_size))
    }

    // MARK: Events

    func changedData(_ inode: Inode, _ change: DataChange) {
        guard inode.isRegularFile else { return }
        let id = inode.key
        switch change {
        case .overwrite(let offset, let length):
            append { (log) throws(Errno) in
                let (at, count) = try copy(inode, offset: offset, length: length, into: &log)
                return .write(id, offset: offset, length: count, data: at)
            }
        case .resize(let size):
            append { _ in .resize(id, size: size) }
        case .allocate:
            append { (_) throws(Errno) in .resize(id, size: try size(of: inode)) }
        case .shift(let offset):
            // Everything from `offset` moved: the new size, then the bytes there now.
            append { (log) throws(Errno) in
                let size = try size(of: inode)
                try log.operations.writeAll(RecordedOperation.resize(id, size: size).line + "\n")
                let (at, count) = try copy(inode, offset: offset, length: size > offset ? size - offset : 0, into: &log)
                return .write(id, offset: offset, length: count, data: at)
            }
        }
    }

    func synced(_ inode: Inode) {
        guard inode.isRegularFile else { return }
        append { _ in .synced(inode.key) }
    }

    func directorySynced(_ directory: EntryID) {
        append { _ in .directorySynced(directory) }
    }

    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) {
        let kind = RecordedOperation.EntryKind(status)
        var target: [UInt8] = []
        if kind == .symbolicLink, let link = try? inodes.existing(id)?.withDescriptor({ (file) throws(Errno) in try file.readSymbolicLink() }) {
            target = link.map { UInt8(bitPattern: $0) }
        }
        let bytes = CrashRecorder.bytes(name)
        append { _ in .created(parent: parent, name: bytes, entry: id, kind: kind, mode: UInt32(status.st_mode & 0o7777), target: target) }
    }

    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) {
        let bytes = CrashRecorder.bytes(name)
        append { _ in .removed(parent: parent, name: bytes, entry: id) }
    }

    func moved(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID) {
        let from = CrashRecorder.bytes(name), to = CrashRecorder.bytes(newName)
        append { _ in .moved(parent: parent, name: from, newParent: newParent, newName: to, entry: id) }
    }

    /// Both lines under one hold of the log's lock, with nothing between
    /// them (no other operation, no output): the log says one rename, as
    /// rename(2) made one.
    func renamedOver(_ status: stat, id: EntryID, name: CName, from parent: EntryID, newName: CName, to newParent: EntryID,
                     replacing replaced: stat, replacedID: EntryID) {
        let from = CrashRecorder.bytes(name), to = CrashRecorder.bytes(newName)
        append { (log) throws(Errno) in
            try log.operations.writeAll(RecordedOperation.removed(parent: newParent, name: to, entry: replacedID).line + "\n")
            return .moved(parent: parent, name: from, newParent: newParent, newName: to, entry: id)
        }
    }

    func exchanged(_ exchange: Exchange) {
        guard !exchange.oneBackingFile else { return }
        let one = CrashRecorder.bytes(exchange.name), other = CrashRecorder.bytes(exchange.newName)
        append { _ in .exchanged(parent: exchange.parent, name: one, newParent: exchange.newParent, newName: other) }
    }
}
