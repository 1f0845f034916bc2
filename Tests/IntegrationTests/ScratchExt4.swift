import Foundation
import Glibc
import XCTest

/// A fresh ext4 filesystem of its own on a loop image, mounted on a
/// directory the test names: for tests whose outcome rests on how ext4 hands
/// out inode numbers (the lowest free one in the parent's group), which a
/// busy host disk with other groups, no journal or another filesystem does
/// not promise. `release` unmounts it, detaches the loop device and removes
/// the image; its `lost+found` is removed at once, so the directory starts empty.
final class ScratchExt4 {
    let path: String
    private let imageDirectory: String
    private var loopDevice: String?
    private var mounted = false

    init(at path: String, size: Int = 128 << 20) throws {
        self.path = path
        guard let directory = LoopImageTestCase.memoryDirectory(room: size) ?? Self.diskDirectory() else {
            throw LoopImageTestCase.unavailable("no directory for an ext4 image")
        }
        imageDirectory = directory
        let image = directory + "/ext4.img"
        let truncated = try Subprocess.run(["truncate", "-s", String(size), image], timeout: 30)
        let made = truncated.status == 0 ? try Subprocess.run(ImageKind.ext4.mkfs + [image], timeout: 60) : truncated
        guard made.status == 0 else { _ = release(); throw LoopImageTestCase.unavailable("cannot make an ext4 image: \(made)") }
        let attached = try Subprocess.run(["losetup", "-f", "--show", image], timeout: 30)
        guard attached.status == 0 else { _ = release(); throw LoopImageTestCase.unavailable("no loop device for an ext4 image: \(attached)") }
        loopDevice = attached.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let mount = try Subprocess.run(["mount", loopDevice!, path], timeout: 30)
        guard mount.status == 0 else { _ = release(); throw LoopImageTestCase.unavailable("cannot mount an ext4 image on \(path): \(mount)") }
        mounted = true
        guard rmdir(path + "/lost+found") == 0, chmod(path, 0o755) == 0 else {
            let failure = Errno.name(errno)
            _ = release()
            throw SubprocessError("cannot empty the ext4 image's root: \(failure)")
        }
    }

    /// A directory under /tmp, where no tmpfs has room.
    private static func diskDirectory() -> String? {
        var template = Array("/tmp/purgefs-image-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { return nil }
        return String(cString: template)
    }

    /// Unmounts (retrying: it can stay busy a moment after a daemon exits),
    /// detaches and removes; returns what failed. Call once nothing of purgefs is mounted on it.
    func release() -> [String] {
        var problems: [String] = []
        if mounted {
            if eventually(timeout: 10, { (try? Subprocess.run(["umount", self.path], timeout: 30))?.status == 0 }) {
                mounted = false
            } else {
                problems.append("cannot unmount the ext4 image at \(path)")
            }
        }
        if !mounted, let loopDevice, (try? Subprocess.run(["losetup", "-d", loopDevice], timeout: 30))?.status != 0 {
            problems.append("cannot detach \(loopDevice)")
        }
        if !mounted, let failure = removeTree(imageDirectory) { problems.append("cannot remove \(imageDirectory): \(failure)") }
        return problems
    }
}
