import Glibc
import PurgeCore
import PurgeSys

extension StatePointer {
    /// At mount, once the state directory is locked: with `state=DIR`, tells
    /// the container's own `.purgefs` (if it has one) where its state is now;
    /// with the default state directory, removes an old pointer from it.
    /// By descriptor, before the mount covers the container. Failing is not
    /// fatal: it is said on stderr (the daemon log once detached).
    static func record(_ statePath: String, root: FileDescriptor, state: FileDescriptor, request: MountRequest) {
        let defaultPath = MountOptions().stateDirectoryPath(containerPath: request.container)
        if AbsolutePath.normalise(statePath) == defaultPath {
            do {
                try state.unlink(fileName)
            } catch where error == .noEntry {
            } catch {
                Diagnostics.note("cannot remove the old \(statePath)/\(fileName): \(error)")
            }
            return
        }
        let own: FileDescriptor
        do {
            own = try FileDescriptor.open(
                MountOptions.defaultStateDirectoryName, in: root, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
            return  // No .purgefs of its own: nothing can be misread.
        }
        defer { own.closeQuietly() }
        do {
            try StateDirectory(descriptor: own).replace(fileName, with: encoded(statePath))
        } catch {
            Diagnostics.note("cannot record in \(defaultPath)/\(fileName) that the state is in \(statePath): \(error)")
        }
    }
}
