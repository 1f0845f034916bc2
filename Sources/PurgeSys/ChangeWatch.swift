import CLinux
import Glibc

/// One change the kernel reported in a watched filesystem: a name made,
/// removed, renamed, or a file's data or attributes changed.
public struct ChangeEvent: Sendable {
    public struct Kind: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let created = Kind(rawValue: 1 << 0)
        public static let deleted = Kind(rawValue: 1 << 1)
        /// Renamed: `directory`/`name` is where it was, `target` where it is
        /// (inotify reports the two halves as two events, without `target`:
        /// `deleted` where it was, `created` and `renamed` where it is).
        public static let renamed = Kind(rawValue: 1 << 2)
        public static let modified = Kind(rawValue: 1 << 3)
        public static let attributes = Kind(rawValue: 1 << 4)
        /// The entry is a directory.
        public static let onDirectory = Kind(rawValue: 1 << 5)
        /// The kernel dropped events: anything may have changed.
        public static let overflow = Kind(rawValue: 1 << 6)
        /// inotify's watch is gone (its directory was deleted): its number
        /// may be given to another directory, and the directory's inode
        /// number to a new directory.
        public static let unwatched = Kind(rawValue: 1 << 7)
    }

    /// The directory an event is about: by file handle (fanotify) or by watch (inotify).
    public enum Place: Hashable, Sendable {
        case handle(FileHandle)
        case watch(Int32)
    }

    public let kind: Kind
    /// The process that made the change (fanotify; 0 from inotify, which does not say).
    public let pid: Int32
    public let directory: Place?
    /// NUL-terminated; just the NUL for an event without a name.
    public let name: [CChar]
    /// A rename's destination (fanotify).
    public let target: (directory: Place, name: [CChar])?
}

/// Changes anywhere on one filesystem, with the directory as a file handle
/// and the entry's name (`fanotify(7)` with `FAN_REPORT_DFID_NAME` and a
/// filesystem mark). Needs `CAP_SYS_ADMIN`.
public final class FanotifyWatch: Sendable {
    public let descriptor: FileDescriptor

    /// Marks the filesystem holding `directory` for creations, deletions,
    /// renames, modifications and attribute changes.
    /// Wraps `fanotify_init(2)` and `fanotify_mark(2)` with `FAN_MARK_FILESYSTEM`.
    public init(filesystemOf directory: FileDescriptor) throws(Errno) {
        let fd = try checked { clinux_fanotify_init() }
        descriptor = FileDescriptor(rawValue: fd)
        let common = clinux_FAN_CREATE | clinux_FAN_DELETE | clinux_FAN_MODIFY | clinux_FAN_CLOSE_WRITE
            | clinux_FAN_ATTRIB | clinux_FAN_ONDIR
        do {
            do {
                _ = try checked { clinux_fanotify_mark_filesystem(fd, common | clinux_FAN_RENAME, directory.rawValue) }
            } catch where error == .invalidArgument {
                // Before Linux 5.17: a rename is two events.
                _ = try checked {
                    clinux_fanotify_mark_filesystem(fd, common | clinux_FAN_MOVED_FROM | clinux_FAN_MOVED_TO, directory.rawValue)
                }
            }
        } catch {
            descriptor.closeQuietly()
            throw error
        }
    }

    deinit { descriptor.closeQuietly() }

    /// Waits up to `milliseconds` for events; true when some are ready.
    public func wait(milliseconds: Int32) -> Bool { ChangeWatchIO.wait(descriptor, milliseconds: milliseconds) }

    /// The events ready now (none if none are), but those made by process
    /// `excluded` (dropped before they cost anything). Wraps `read(2)`.
    public func read(excluding excluded: Int32 = 0) throws(Errno) -> [ChangeEvent] {
        try ChangeWatchIO.drain(descriptor) { buffer, length in
            var events: [ChangeEvent] = []
            var raw = clinux_fan_event()
            var offset = 0
            while true {
                let next = clinux_fanotify_next(buffer, length, offset, &raw)
                if next < 0 { break }
                offset = next
                if excluded != 0 && raw.pid == excluded && raw.mask & clinux_FAN_Q_OVERFLOW == 0 { continue }
                events.append(Self.event(raw))
            }
            return events
        }
    }

    private static func event(_ raw: clinux_fan_event) -> ChangeEvent {
        var kind: ChangeEvent.Kind = []
        if raw.mask & clinux_FAN_Q_OVERFLOW != 0 { kind.insert(.overflow) }
        if raw.mask & (clinux_FAN_CREATE | clinux_FAN_MOVED_TO) != 0 { kind.insert(.created) }
        if raw.mask & (clinux_FAN_DELETE | clinux_FAN_MOVED_FROM) != 0 { kind.insert(.deleted) }
        if raw.mask & clinux_FAN_RENAME != 0 { kind.insert(.renamed) }
        if raw.mask & (clinux_FAN_MODIFY | clinux_FAN_CLOSE_WRITE) != 0 { kind.insert(.modified) }
        if raw.mask & clinux_FAN_ATTRIB != 0 { kind.insert(.attributes) }
        if raw.mask & clinux_FAN_ONDIR != 0 { kind.insert(.onDirectory) }
        func place(_ type: Int32, _ count: UInt32, _ bytes: UnsafePointer<UInt8>?) -> ChangeEvent.Place? {
            guard count > 0, let bytes else { return nil }
            return .handle(FileHandle(type: type, bytes: Array(UnsafeBufferPointer(start: bytes, count: Int(count)))))
        }
        func name(_ text: UnsafePointer<CChar>?) -> [CChar] {
            guard let text else { return [0] }
            return Array(UnsafeBufferPointer(start: text, count: strlen(text) + 1))
        }
        let target = place(raw.new_handle_type, raw.new_handle_bytes, raw.new_handle).map { ($0, name(raw.new_name)) }
        return ChangeEvent(
            kind: kind, pid: raw.pid, directory: place(raw.handle_type, raw.handle_bytes, raw.handle),
            name: name(raw.name), target: target)
    }
}

/// Changes in single directories, one watch each (`inotify(7)`): the
/// fallback where fanotify is not allowed. Does not say who made a change.
public final class InotifyWatch: Sendable {
    public let descriptor: FileDescriptor

    /// Wraps `inotify_init1(2)`.
    public init() throws(Errno) {
        descriptor = FileDescriptor(rawValue: try checked { clinux_inotify_init() })
    }

    deinit { descriptor.closeQuietly() }

    /// Watches the entries of `directory`; returns the watch (the same one
    /// for a directory watched already). Wraps `inotify_add_watch(2)`.
    public func watch(_ directory: FileDescriptor) throws(Errno) -> Int32 {
        let mask = clinux_IN_CREATE | clinux_IN_DELETE | clinux_IN_MOVED_FROM | clinux_IN_MOVED_TO | clinux_IN_MODIFY
            | clinux_IN_CLOSE_WRITE | clinux_IN_ATTRIB | clinux_IN_ONLYDIR | clinux_IN_EXCL_UNLINK
        return try checked { clinux_inotify_watch(descriptor.rawValue, directory.rawValue, mask) }
    }

    /// Wraps `inotify_rm_watch(2)`.
    public func unwatch(_ watch: Int32) {
        _ = clinux_inotify_unwatch(descriptor.rawValue, watch)
    }

    public func wait(milliseconds: Int32) -> Bool { ChangeWatchIO.wait(descriptor, milliseconds: milliseconds) }

    /// The events ready now. A watch whose directory is gone reports
    /// `unwatched` once, then nothing more.
    public func read() throws(Errno) -> [ChangeEvent] {
        try ChangeWatchIO.drain(descriptor) { buffer, length in
            var events: [ChangeEvent] = []
            var raw = clinux_in_event()
            var offset = 0
            while true {
                let next = clinux_inotify_next(buffer, length, offset, &raw)
                if next < 0 { break }
                offset = next
                var kind: ChangeEvent.Kind = []
                if raw.mask & clinux_IN_Q_OVERFLOW != 0 { kind.insert(.overflow) }
                if raw.mask & (clinux_IN_CREATE | clinux_IN_MOVED_TO) != 0 { kind.insert(.created) }
                if raw.mask & clinux_IN_MOVED_TO != 0 { kind.insert(.renamed) }  // may replace a name there
                if raw.mask & (clinux_IN_DELETE | clinux_IN_MOVED_FROM) != 0 { kind.insert(.deleted) }
                if raw.mask & (clinux_IN_MODIFY | clinux_IN_CLOSE_WRITE) != 0 { kind.insert(.modified) }
                if raw.mask & clinux_IN_ATTRIB != 0 { kind.insert(.attributes) }
                if raw.mask & UInt32(0x4000_0000) != 0 { kind.insert(.onDirectory) }  // IN_ISDIR
                if raw.mask & clinux_IN_IGNORED != 0 { kind.insert(.unwatched) }
                if kind.isEmpty { continue }  // IN_UNMOUNT and the like
                let name = raw.name.map { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) } ?? [0]
                events.append(ChangeEvent(kind: kind, pid: 0, directory: raw.wd >= 0 ? .watch(raw.wd) : nil, name: name, target: nil))
            }
            return events
        }
    }
}

enum ChangeWatchIO {
    /// Wraps `poll(2)`.
    static func wait(_ descriptor: FileDescriptor, milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0 && entry.revents & Int16(POLLIN) != 0
    }

    /// Reads what is ready (a few buffers at most), parsing each with `parse`.
    static func drain(
        _ descriptor: FileDescriptor, parse: (UnsafePointer<UInt8>, Int) -> [ChangeEvent]
    ) throws(Errno) -> [ChangeEvent] {
        var events: [ChangeEvent] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        for _ in 0..<16 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, $0.count) }
            if count < 0 {
                let error = Errno.current
                if error == .interrupted { continue }
                if error == .tryAgain { break }
                throw error
            }
            if count == 0 { break }
            events += buffer.withUnsafeBufferPointer { parse($0.baseAddress!, count) }
        }
        return events
    }
}

extension FileHandle {
    /// A handle as the kernel reported it (fanotify's directory handles).
    init(type: Int32, bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
    }
}
