import Glibc
import PurgeCore
import PurgeSys

/// Makes crash states (`CrashExploration.State`) in one directory, again and
/// again, from the base copy and the operation log's data file, sharing
/// what did not change: an entry of the previous state that is still as it
/// was built (same inode, size and change time: a checker that wrote to it
/// changed its ctime, fine-grained on Linux 6.13+ once read) and that the
/// new state holds alike is kept; everything else is removed and made
/// again. A file is made from its base file by a reflink (`FICLONE`) where
/// the backing filesystem has them, else by `copy_file_range`, then the
/// recorded writes over it, then its size.
final class CrashStateBuilder {
    let directory: String
    let base: String
    let data: FileDescriptor

    private struct Built: Equatable {
        var entry: CrashExploration.Entry
        var inode: UInt64
        var size: Int64
        var changed: timespec

        static func == (lhs: Built, rhs: Built) -> Bool {
            lhs.entry == rhs.entry && lhs.inode == rhs.inode && lhs.size == rhs.size
                && lhs.changed.tv_sec == rhs.changed.tv_sec && lhs.changed.tv_nsec == rhs.changed.tv_nsec
        }
    }

    private var built: [String: Built] = [:]
    /// Files made (not kept) over all states, and bytes written into them.
    private(set) var filesMade = 0

    init(directory: String, base: String, data: FileDescriptor) throws(Errno) {
        self.directory = directory
        self.base = base
        self.data = data
        if !Paths.exists(directory) { try Paths.makeDirectory(directory, mode: 0o755) }
    }

    /// Makes `state` in `directory`.
    func build(_ state: CrashExploration.State) throws(Errno) {
        let wanted = Dictionary(state.entries.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        // Identities with more than one name are made again each time: links are cheap.
        var names: [EntryID: Int] = [:]
        for entry in state.entries where entry.kind == .file { names[entry.identity, default: 0] += 1 }
        var kept: Set<String> = []
        try sweep("", wanted: wanted, linked: names, kept: &kept)
        var firstPath: [EntryID: String] = [:]
        for entry in state.entries {
            if kept.contains(entry.path) {
                firstPath[entry.identity] = firstPath[entry.identity] ?? entry.path
                continue
            }
            let path = directory + "/" + entry.path
            switch entry.kind {
            case .directory:
                if !Paths.exists(path) { try Paths.makeDirectory(path, mode: mode_t(entry.mode)) }
            case .file:
                if let first = firstPath[entry.identity] {
                    try Paths.link(directory + "/" + first, as: path)
                } else {
                    try make(entry.image ?? .empty, at: path, mode: mode_t(entry.mode))
                    firstPath[entry.identity] = entry.path
                }
            case .symbolicLink:
                try Paths.makeSymbolicLink(path, target: entry.target)
            case .other:
                continue  // devices and FIFOs are not made again
            }
            if entry.kind != .other, let status = try? Paths.linkStatus(path) {
                built[entry.path] = Built(entry: entry, inode: UInt64(status.st_ino), size: Int64(status.st_size), changed: status.st_ctim)
            }
        }
    }

    /// Removes what is not to be kept below `relative`, depth first; fills `kept`.
    private func sweep(_ relative: String, wanted: [String: CrashExploration.Entry], linked: [EntryID: Int], kept: inout Set<String>) throws(Errno) {
        let path = relative.isEmpty ? directory : directory + "/" + relative
        for name in try Paths.names(in: path) {
            let child = relative.isEmpty ? name : relative + "/" + name
            let childPath = directory + "/" + child
            guard let status = try? Paths.linkStatus(childPath) else { continue }
            let isDirectory = status.st_mode & S_IFMT == S_IFDIR
            if let target = wanted[child], let record = built[child],
               record == Built(entry: target, inode: UInt64(status.st_ino), size: Int64(status.st_size), changed: status.st_ctim),
               (linked[target.identity] ?? 1) <= 1 {
                kept.insert(child)
                if isDirectory { try sweep(child, wanted: wanted, linked: linked, kept: &kept) }
                continue
            }
            if isDirectory, wanted[child]?.kind == .directory {
                // The directory stays (its mode is set again); what is in it is looked at.
                try? Paths.changeMode(childPath, mode_t(wanted[child]!.mode))
                kept.insert(child)
                try sweep(child, wanted: wanted, linked: linked, kept: &kept)
                continue
            }
            built[child] = nil
            if isDirectory {
                try OwnMount.removeWithPatience(childPath, missingIsFine: true)
                for key in built.keys where key.hasPrefix(child + "/") { built[key] = nil }
            } else {
                try Paths.removeFile(childPath)
            }
        }
    }

    /// Writes `image` as a new file at `path`.
    private func make(_ image: FileImage, at path: String, mode: mode_t) throws(Errno) {
        filesMade += 1
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode: 0o600)
        defer { file.closeQuietly() }
        if let origin = image.origin, image.originLength > 0 {
            let source = try FileDescriptor.open(path: base + "/" + origin, flags: O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            defer { source.closeQuietly() }
            do throws(Errno) {
                try file.clone(from: source)
            } catch {
                var done: UInt64 = 0
                while done < image.originLength {
                    let count = try file.copyRange(from: source, sourceOffset: Int64(done), offset: Int64(done),
                                                   length: Int(min(image.originLength - done, 1 << 30)))
                    if count == 0 { break }
                    done += UInt64(count)
                }
            }
            try file.truncate(to: Int64(image.originLength))
        }
        for piece in image.pieces {
            var done: UInt64 = 0
            while done < piece.length {
                let count = try file.copyRange(from: data, sourceOffset: Int64(piece.data + done), offset: Int64(piece.offset + done),
                                               length: Int(piece.length - done))
                if count == 0 { throw Errno(EIO) }  // the data file is shorter than its log says
                done += UInt64(count)
            }
        }
        try file.truncate(to: Int64(image.size))
        try file.changeMode(mode)
    }
}
