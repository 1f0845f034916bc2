import PurgeCore
import PurgeSys

/// A name inside the container that does not exist through the mount: the
/// state directory. Matched by the parent directory's identity and the name,
/// so it is hidden however the directory is reached.
struct HiddenEntry: Sendable {
    let parent: EntryID
    let name: [CChar]

    func hides(_ name: UnsafePointer<CChar>, in directory: Inode) -> Bool {
        directory.key == parent && hides(name)
    }

    /// Whether `name` is the hidden name (in whichever directory).
    func hides(_ name: UnsafePointer<CChar>) -> Bool {
        self.name.withUnsafeBufferPointer { CNames.equal($0.baseAddress!, name) }
    }
}
