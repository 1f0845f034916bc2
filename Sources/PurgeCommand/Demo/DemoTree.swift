import Glibc
import PurgeEngines
import PurgeSys

/// What the demo lists of a directory tree, read entry by entry (through the
/// mount, or in the container), never following symlinks.
enum DemoTree {
    struct Entry: Equatable {
        /// Relative to the directory listed.
        var path: String
        /// `find -printf %y`: `f`, `d`, `l` or `?`.
        var type: Character
        var size: Int64
        /// Modification time, seconds since the epoch.
        var modified: Int64
    }

    /// Every entry below `root`, sorted by path.
    static func entries(under root: String) throws(CommandExit) -> [Entry] {
        var result: [Entry] = []
        do throws(Errno) {
            try collect(root, prefix: "", into: &result)
        } catch {
            throw .failure("demo: cannot list \(root): \(error)")
        }
        return result.sorted { $0.path < $1.path }
    }

    /// The names in `directory`, sorted, without `.` and `..`.
    static func names(in directory: String) throws(CommandExit) -> [String] {
        do throws(Errno) {
            let descriptor = try FileDescriptor.open(path: directory, flags: O_RDONLY | O_DIRECTORY)
            defer { descriptor.closeQuietly() }
            return try names(of: descriptor).sorted()
        } catch {
            throw .failure("demo: cannot list \(directory): \(error)")
        }
    }

    private static func names(of directory: FileDescriptor) throws(Errno) -> [String] {
        let stream = try DirectoryStream(directory)
        var names: [String] = []
        while let entry = try stream.next() {
            if !entry.isDotOrDotDot { names.append(String(cString: entry.name)) }
        }
        return names
    }

    private static func collect(_ path: String, prefix: String, into result: inout [Entry]) throws(Errno) {
        let directory = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        defer { directory.closeQuietly() }
        for name in try names(of: directory) {
            let status: stat
            do throws(Errno) {
                status = try name.withCString { cName in Result { () throws(Errno) in try directory.status(of: cName) } }.get()
            } catch {
                if error == .noEntry { continue }  // gone since it was listed (purged)
                throw error
            }
            let type: Character
            switch status.st_mode & S_IFMT {
            case S_IFREG: type = "f"
            case S_IFDIR: type = "d"
            case S_IFLNK: type = "l"
            default: type = "?"
            }
            let relative = prefix + name
            result.append(Entry(path: relative, type: type, size: Int64(status.st_size), modified: Int64(status.st_mtim.tv_sec)))
            if type == "d" { try collect(path + "/" + name, prefix: relative + "/", into: &result) }
        }
    }
}
