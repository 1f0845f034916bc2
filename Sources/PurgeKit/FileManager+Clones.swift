import Foundation
import PurgeKitFoundation
import PurgeSys

/// `copyItem(at:to:)` that clones inside a purgefs mount, as it does on APFS.
///
/// Foundation on Linux (swift 6.3.1) copies a regular file with `sendfile(2)`
/// in 4 KiB pieces (seen with strace), which reaches a purgefs mount as
/// reads and writes it cannot tell from any other: the copy costs its full
/// size, `content_id` differs, `clone_savings` stays 0. The mount makes a
/// clone of a whole-file `copy_file_range` into an empty file, the call
/// `purgefs clone` and coreutils `cp` make; so when source and destination
/// are in one purgefs mount, PurgeKit makes that call for a regular file,
/// and for a folder makes its directories, clones each regular file in it
/// and copies each symlink as a symlink, modes kept, as Foundation copies a
/// folder. Anything else in a folder (a FIFO, a socket), a symlink given as
/// the source, and copies across mounts are Foundation's. `FileManager.default`
/// answers `copyItem(at:to:)` with it.
extension FileManager {
    func cloningCopyItem(at srcURL: URL, to dstURL: URL) throws {
        guard srcURL.isFileURL, dstURL.isFileURL,
              let source = PurgeMount.containing(srcURL.path), let destination = PurgeMount.containing(dstURL.deletingLastPathComponent().path),
              source.entry.id == destination.entry.id,
              let status = try? Paths.linkStatus(srcURL.path),
              status.st_mode & S_IFMT == S_IFREG || status.st_mode & S_IFMT == S_IFDIR
        else {
            return try FoundationAnswers.copyItem(self, at: srcURL, to: dstURL)
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            // Foundation's first check: the destination is free (a dangling symlink takes the name too).
            if (try? Paths.linkStatus(dstURL.path)) != nil {
                throw FileError.cocoa(.fileWriteFileExists, path: dstURL.path, underlying: .exists)
            }
            try copyFolder(srcURL.path, mode: status.st_mode & 0o7777, to: dstURL.path)
        } else {
            try cloneFile(srcURL.path, to: dstURL.path)
        }
    }

    /// Makes `destination` a clone of the regular file `source`.
    private func cloneFile(_ source: String, to destination: String) throws {
        let url = URL(fileURLWithPath: destination)
        do {
            try Paths.clone(source: source, directory: url.deletingLastPathComponent().path, name: url.lastPathComponent)
        } catch where error == .exists {
            throw FileError.cocoa(.fileWriteFileExists, path: destination, underlying: error)
        } catch where error == .noEntry {
            // The destination's folder is missing (the source was just seen).
            throw FileError.cocoa(.fileNoSuchFile, path: destination, underlying: error)
        } catch {
            throw FileError.cocoa(error, path: destination, .write)
        }
    }

    /// Copies the folder `source` (with `mode`) to `destination`, which is
    /// free: entries in name order, each directory's mode set once it is
    /// filled (so a read-only folder can be filled first).
    private func copyFolder(_ source: String, mode: mode_t, to destination: String) throws {
        do {
            try Paths.makeDirectory(destination, mode: 0o700)
        } catch {
            throw FileError.cocoa(error, path: destination, .write)
        }
        for name in try contentsOfDirectory(atPath: source).sorted() {
            let from = source + "/" + name, to = destination + "/" + name
            let status: stat
            do {
                status = try Paths.linkStatus(from)
            } catch {
                throw FileError.cocoa(error, path: from, .read)
            }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                try copyFolder(from, mode: status.st_mode & 0o7777, to: to)
            case S_IFREG:
                try cloneFile(from, to: to)
            case S_IFLNK:
                do {
                    try Paths.makeSymbolicLink(to, target: try Paths.symbolicLinkTarget(from))
                } catch {
                    throw FileError.cocoa(error, path: to, .write)
                }
            default:
                try FoundationAnswers.copyItem(self, at: URL(fileURLWithPath: from), to: URL(fileURLWithPath: to))
            }
        }
        do {
            try Paths.changeMode(destination, mode)
        } catch {
            throw FileError.cocoa(error, path: destination, .write)
        }
    }
}
