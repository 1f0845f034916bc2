import Glibc
import PurgeCore
import PurgeSys

/// Temporary files `purgefs clone` leaves when it is killed between making
/// its temporary name and renaming it into place: the walk at mount finds
/// them by name (they are not counted), and they are removed before the mount.
struct CloneLeftovers {
    /// What `purgefs clone` names its temporary files with.
    static let prefix = ".purgefs-clone."

    private(set) var found: [(parent: EntryID, name: [CChar])] = []

    static func matches(_ name: CName) -> Bool {
        CNames.hasPrefix(name, prefix)
    }

    mutating func note(_ name: CName, in parent: EntryID) {
        found.append((parent, CNames.copy(name)))
    }

    /// Removes each leftover that is still a regular file where it was found.
    func remove(from root: FileDescriptor, names: DirectoryNames) {
        for leftover in found {
            guard let chain = names.components(of: leftover.parent),
                  let directory = try? DirectoryNames.open(chain, from: root) else { continue }
            defer { directory.closeQuietly() }
            leftover.name.withUnsafeBufferPointer { buffer in
                let name = buffer.baseAddress!
                guard let status = try? directory.status(of: name), status.st_mode & S_IFMT == S_IFREG else { return }
                do {
                    try directory.unlink(name)
                    Diagnostics.note("removed \(String(cString: name)), left by an interrupted purgefs clone")
                } catch {
                    Diagnostics.note("cannot remove \(String(cString: name)) left by an interrupted purgefs clone: \(error)")
                }
            }
        }
    }
}
