import Glibc

/// Clones a file through a purgefs mount, the way `purgefs clone` and
/// PurgeKit's `FileManager.copyItem(at:to:)` do: a temporary name in the
/// destination's directory, one `copy_file_range` of the whole file into it
/// (which the daemon turns into a clone), then a rename into place that
/// never replaces (`RENAME_NOREPLACE`).
extension Paths {
    /// Names the temporary files start with; the mount removes leftovers.
    public static let cloneTemporaryPrefix = ".purgefs-clone."

    /// Makes `directory/name` a clone of the regular file `source`, with its
    /// mode; `EEXIST` when the name is taken. Wraps `copy_file_range(2)` and
    /// `renameat2(2)`.
    public static func clone(source: String, directory: String, name: String) throws(Errno) {
        let input = try FileDescriptor.open(path: source, flags: O_RDONLY)
        defer { input.closeQuietly() }
        let status = try input.status()
        let parent = try FileDescriptor.open(path: directory, flags: O_RDONLY | O_DIRECTORY)
        defer { parent.closeQuietly() }
        var temporary = ""
        var output: FileDescriptor?
        for _ in 0..<16 where output == nil {
            temporary = cloneTemporaryPrefix + String(UInt64.random(in: 0...UInt64.max), radix: 36)
            do {
                output = try FileDescriptor.open(temporary, in: parent, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW,
                                                 mode: status.st_mode & 0o7777)
            } catch where error == .exists {
                continue
            }
        }
        guard let output else { throw Errno.exists }
        do throws(Errno) {
            // The mode exactly, whatever the umask took away at creation.
            try output.changeMode(status.st_mode & 0o7777)
            var done: Int64 = 0
            let size = Int64(status.st_size)
            while done < size {
                let copied = try output.copyRange(from: input, sourceOffset: done, offset: done, length: Int(size - done))
                if copied == 0 { break }
                done += Int64(copied)
            }
            try output.close()
            try parent.rename(temporary, to: name, in: parent, flags: .noReplace)
        } catch {
            output.closeQuietly()
            try? parent.unlink(temporary)
            throw error
        }
    }
}
