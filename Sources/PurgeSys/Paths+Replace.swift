import Glibc

extension Paths {
    /// Replaces the file `name` in the directory at `directory` with `text`,
    /// whole or not at all: written to a temporary name, synced, renamed
    /// over. Wraps `openat(2)`, `fsync(2)` and `renameat2(2)`.
    public static func replaceFile(_ name: String, in directory: String, with text: String, mode: mode_t = 0o644) throws(Errno) {
        let parent = try FileDescriptor.open(path: directory, flags: O_RDONLY | O_DIRECTORY)
        defer { parent.closeQuietly() }
        let temporary = ".\(name).\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        let file = try FileDescriptor.open(temporary, in: parent, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        do throws(Errno) {
            try file.writeAll(text)
            try file.sync()
            try file.close()
            try parent.rename(temporary, to: name, in: parent)
        } catch {
            file.closeQuietly()
            try? parent.unlink(temporary)
            throw error
        }
    }
}
