import Glibc
import PurgeSys

/// suid/sgid clearing under killpriv v2 (`KernelWire`). The daemon writes,
/// truncates and chowns as root, with `CAP_FSETID`, so the backing
/// filesystem would keep the bits: the kernel says when a caller without
/// that capability changed the file, and the daemon clears them as the
/// kernel would have (`setattr_should_drop_suidgid`): suid always; sgid when
/// the group may execute, or else (it then marks mandatory locking) when
/// the caller is not in the file's group. A chown as root clears them in the
/// backing filesystem already. `security.capability` goes with any write or
/// truncation of the backing file.
///
/// The kernel keeps the mode it had cached across a write or an open (only
/// a setattr's reply brings the new one), so after clearing bits there the
/// daemon drops the kernel's cached attributes (`notifying`), as after an
/// ACL's change of mode.
extension ContainerFileSystem {
    /// Clears the bits when the request being served asks for it.
    func clearSetIDIfAsked(_ inode: Inode, caller: CallerIdentity, notifying: Bool) throws(Errno) {
        guard KernelWire.killsSetID, inode.isRegularFile else { return }
        let cleared = try withAttributeHolder(inode) { (file) throws(Errno) -> Bool in
            let status = try file.status()
            let mode = status.st_mode
            var kept = mode & ~S_ISUID
            if mode & S_ISGID != 0 && (mode & S_IXGRP != 0 || !caller.isMember(of: status.st_gid)) {
                kept &= ~S_ISGID
            }
            guard kept != mode else { return false }
            try file.changeMode(kept & 0o7777)
            return true
        }
        if cleared && notifying { notifier.invalidateAttributes(of: inode.id) }
    }

    /// After an `O_TRUNC` open (`open`, or `create` of an existing file):
    /// clears the bits when asked; if that fails, the open is undone.
    func clearSetIDAfterTruncating(_ file: OpenFile, flags: Int32, caller: CallerIdentity) throws(Errno) {
        guard flags & O_TRUNC != 0 else { return }
        do throws(Errno) { try clearSetIDIfAsked(file.inode, caller: caller, notifying: true) } catch {
            release(file)
            throw error
        }
    }
}
