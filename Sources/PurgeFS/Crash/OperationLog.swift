import Glibc
import PurgeCore
import PurgeSys

/// The reading side of a `record=DIR` directory, which `OperationRecorder`
/// writes: the one place that reads it, for `purgefs explore` (the run it
/// recorded, and a recording kept for `--replay`) and anything else. The
/// lines are `RecordedOperation`'s; the bytes they name are in `DIR/data`;
/// the tree a log starts from is read here with the identities and kinds
/// the recorder logs (`tree(of:)`), so the two cannot disagree.
public enum OperationLog {
    /// The records of `directory/operations`, in order; nil when a line is
    /// not one (the caller says what that means for it).
    public static func records(in directory: String) throws(Errno) -> [RecordedOperation]? {
        let text = String(decoding: try FileDescriptor.readFile(directory + "/" + RecordedOperation.operationsFileName, limit: 1 << 30),
                          as: UTF8.self)
        return try? RecordedOperation.parse(text[...])
    }

    /// `directory/data`, open for reading (the caller closes it).
    public static func openData(in directory: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor.open(path: directory + "/" + RecordedOperation.dataFileName, flags: O_RDONLY | O_CLOEXEC)
    }

    /// The command's stdout as the log's output records hold it, in order.
    public static func output(_ records: [RecordedOperation], data: FileDescriptor) -> [UInt8] {
        var bytes: [UInt8] = []
        for case .output(let offset, let length) in records where length > 0 {
            var chunk = [UInt8](repeating: 0, count: Int(length))
            let count = chunk.withUnsafeMutableBytes { (buffer) -> Int in (try? data.read(into: buffer, at: Int64(offset))) ?? 0 }
            bytes += chunk[..<count]
        }
        return bytes
    }

    /// The tree of `root` (lstat of every entry, parents first, names in
    /// byte order), as the exploration model starts from it.
    public static func tree(of root: String) throws(Errno) -> [CrashExploration.InitialEntry] {
        let top = try Paths.linkStatus(root)
        var entries = [CrashExploration.InitialEntry(path: "", id: EntryID(top), kind: .directory, mode: UInt32(top.st_mode & 0o7777))]
        func visit(_ relative: String) throws(Errno) {
            let path = relative.isEmpty ? root : root + "/" + relative
            let names = try Paths.names(in: path).map { Array($0.utf8) }
            for name in names.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let leaf = String(decoding: name, as: UTF8.self)
                let child = relative.isEmpty ? leaf : relative + "/" + leaf
                let status = try Paths.linkStatus(root + "/" + child)
                let kind = RecordedOperation.EntryKind(status)
                let target = kind == .symbolicLink ? try Paths.symbolicLinkTarget(root + "/" + child) : []
                entries.append(CrashExploration.InitialEntry(path: child, id: EntryID(status), kind: kind, mode: UInt32(status.st_mode & 0o7777),
                                                             size: UInt64(max(0, status.st_size)), target: target))
                if kind == .directory { try visit(child) }
            }
        }
        try visit("")
        return entries
    }
}
