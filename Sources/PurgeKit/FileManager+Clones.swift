import Foundation
import PurgeKitFoundation
import PurgeSys

/// `copyItem(at:to:)` that clones inside a purgefs mount, as it does on APFS.
///
/// Foundation on Linux (swift 6.3.1) copies a regular file with `sendfile(2)`
/// in 4 KiB pieces (seen with strace), which reaches a purgefs mount as
/// reads and writes it cannot tell from any other: the copy costs its full
/// size, `content_id` differs, `clone_savings` stays 0. The mount makes a clone of a whole-file `copy_file_range` into an
/// empty file, the call `purgefs clone` and coreutils `cp` make; so for a
/// regular file whose source and destination are in one purgefs mount,
/// PurgeKit makes that call. Directories, symlinks and copies across
/// mounts are Foundation's.
extension FileManager {
    public func copyItem(at srcURL: URL, to dstURL: URL) throws {
        guard srcURL.isFileURL, dstURL.isFileURL,
              let source = PurgeMount.containing(srcURL.path), let destination = PurgeMount.containing(dstURL.deletingLastPathComponent().path),
              source.entry.id == destination.entry.id,
              let status = try? Paths.linkStatus(srcURL.path), status.st_mode & S_IFMT == S_IFREG
        else {
            return try FoundationAnswers.copyItem(self, at: srcURL, to: dstURL)
        }
        let directory = dstURL.deletingLastPathComponent().path
        let name = dstURL.lastPathComponent
        do {
            try Paths.clone(source: srcURL.path, directory: directory, name: name)
        } catch where error == .exists {
            throw FileError.cocoa(.fileWriteFileExists, path: dstURL.path, underlying: error)
        } catch where error == .noEntry {
            // The destination's folder is missing (the source was just seen).
            throw FileError.cocoa(.fileNoSuchFile, path: dstURL.path, underlying: error)
        } catch {
            throw FileError.cocoa(error, path: dstURL.path, .write)
        }
    }
}
