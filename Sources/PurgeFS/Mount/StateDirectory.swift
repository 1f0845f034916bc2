import Glibc
import PurgeSys

/// The files purgefs keeps in its state directory, reached only through the
/// descriptor opened before mounting (an in-place mount covers its path).
///
/// Whole files are replaced atomically (written aside, synced, renamed over),
/// so a crash leaves the old version or the new one, never a torn one.
struct StateDirectory: Sendable {
    let descriptor: FileDescriptor

    /// The file's bytes, or nil when it does not exist.
    func read(_ name: String) throws(Errno) -> [UInt8]? {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(name, in: descriptor, flags: O_RDONLY | O_NOFOLLOW)
        } catch where error == .noEntry {
            return nil
        }
        defer { file.closeQuietly() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let offset = Int64(bytes.count)
            let count = try chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) -> Int in try file.read(into: buffer, at: offset) }
            }.get()
            bytes += chunk[..<count]
            if count < chunk.count { return bytes }
        }
    }

    /// Replaces the file with `bytes` atomically: written to `temporary`
    /// (`NAME.new` by default), then renamed over it; `durably`, the data
    /// and the rename are synced first (a shared device's files on tmpfs
    /// need not be).
    func replace(_ name: String, with bytes: [UInt8], aside temporary: String? = nil, mode: mode_t = 0o600,
                 durably: Bool = true) throws(Errno) {
        let temporary = temporary ?? name + ".new"
        let file = try FileDescriptor.open(temporary, in: descriptor, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: mode)
        do {
            _ = try bytes.withUnsafeBytes { buffer in
                Result { () throws(Errno) -> Int in try file.write(buffer, at: 0) }
            }.get()
            if durably { try file.sync(dataOnly: true) }
            try file.close()
        } catch {
            file.closeQuietly()
            _ = try? descriptor.unlink(temporary)
            throw error
        }
        try descriptor.rename(temporary, to: name, in: descriptor)
        if durably { try descriptor.sync() }
    }

    /// Makes `name` (if `create`) or keeps it, readable and writable by its
    /// owner only: a file of this user's with a looser mode is made `0600`.
    func makePrivate(_ name: String, create: Bool) throws(Errno) {
        let file = try FileDescriptor.open(name, in: descriptor, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0),
                                           mode: 0o600)
        defer { file.closeQuietly() }
        let status = try file.status()
        guard status.st_mode & S_IFMT == S_IFREG, status.st_mode & 0o7777 != 0o600, status.st_uid == geteuid() else { return }
        try file.changeMode(0o600)
    }

    /// Opens `name` for appending records, creating it if needed.
    func openForAppending(_ name: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor.open(name, in: descriptor, flags: O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, mode: 0o600)
    }
}
