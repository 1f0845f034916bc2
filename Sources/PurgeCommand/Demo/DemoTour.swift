import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// The steps of `purgefs demo`, in order: each shows the command a user
/// would type and its real result, read from the container and the mount at
/// that moment. The session does the running and the taking down.
struct DemoTour {
    let session: DemoSession
    var access = AttributeAccess.live
    private var transcript: DemoTranscript { session.transcript }

    static let container = DemoSession.container, mnt = DemoSession.mountpoint

    init(session: DemoSession) {
        self.session = session
    }

    func run() throws(CommandExit) {
        transcript.note("purgefs demo: a tour of purgefs on a sample app container. The commands below run in "
            + "\(session.base), which is removed at the end.")
        try sampleContainer()
        try mount()
        try listing()
        try readingAndWriting()
        try extendedAttributes()
        try clones()
        try hiddenState()
        let documents = try accounting()
        try step("The same figures, the way Settings > Storage shows an app")
        try session.purgefs(["usage", Self.mnt])
        try manualPurge()
        try pressure()
        try step("What was purged, when, and why")
        try session.purgefs(["log", Self.mnt])
        try noSpace(documentsBefore: documents)
        try unmount()
    }

    private func step(_ title: String) throws(CommandExit) {
        try session.checkInterrupted()
        transcript.heading(title)
    }

    // MARK: The steps

    private func sampleContainer() throws(CommandExit) {
        try step("The sample container (the backing directory): an app's sandbox")
        try DemoSample.create(in: session.containerPath, now: Int64(WallClock.seconds()))
        transcript.command(["find", Self.container, "-type", "f", "-printf", "%8s  %TY-%Tm-%Td %TH:%TM  %P\\n"],
                           redirect: "| sort -k4")
        let files = try DemoTree.entries(under: Self.container).filter { $0.type == "f" }
        transcript.output(files.map { entry in
            HumanText.right(String(entry.size), 8) + "  " + String(HumanText.localTime(Double(entry.modified)).dropLast(3))
                + "  " + entry.path
        }.joined(separator: "\n"))
        transcript.note("Library/Caches and tmp are purgeable zones: their files may go when space runs low, "
            + "least recently used first. The dates are the files' last use.")
    }

    private func mount() throws(CommandExit) {
        try step("Mount it on a simulated \(DemoSample.capacity >> 20)M device (it daemonizes once the mount is usable)")
        try session.mountSample(options: DemoSample.mountOptions)
        transcript.command(["findmnt", "-n", "-o", "TARGET,SOURCE,FSTYPE", Self.mnt])
        guard let entry = OwnMount.purgefsMount(at: session.mountPath) else {
            throw .failure("demo: \(session.mountPath) is no longer mounted")
        }
        transcript.output("\(entry.mountPoint) \(entry.source) \(entry.fileSystemType)")
    }

    private func listing() throws(CommandExit) {
        try step("Listing through the mount")
        transcript.command(["find", Self.mnt, "-mindepth", "1", "-printf", "%y %8s  %P\\n"], redirect: "| sort -k3")
        transcript.output(try DemoTree.entries(under: Self.mnt).map { entry in
            "\(entry.type) " + HumanText.right(String(entry.size), 8) + "  " + entry.path
        }.joined(separator: "\n"))

        try step("Space: df on the mount shows the simulated device")
        try diskFree()
    }

    private func diskFree() throws(CommandExit) {
        transcript.command(["df", "-h", Self.mnt])
        let status: statvfs
        do throws(Errno) {
            let root = try FileDescriptor.open(path: Self.mnt, flags: O_RDONLY | O_DIRECTORY)
            defer { root.closeQuietly() }
            status = try root.fileSystemStatus()
        } catch {
            throw .failure("demo: cannot statvfs \(session.mountPath): \(error)")
        }
        let figures = DiskFreeFigures(fragmentSize: UInt64(status.f_frsize), blocks: UInt64(status.f_blocks),
                                      freeBlocks: UInt64(status.f_bfree), availableBlocks: UInt64(status.f_bavail))
        let source = OwnMount.purgefsMount(at: session.mountPath)?.source ?? session.containerPath
        transcript.output(figures.table(source: source, mountPoint: session.mountPath).joined(separator: "\n"))
    }

    private func readingAndWriting() throws(CommandExit) {
        try step("Reading and writing through the mount")
        transcript.command(["cat", Self.mnt + "/Documents/notes.txt"])
        transcript.output(String(decoding: try readFile(Self.mnt + "/Documents/notes.txt"), as: UTF8.self))
        let report = "/Documents/report.pdf"
        transcript.command(["cmp", Self.container + report, Self.mnt + report])
        guard try readFile(Self.container + report) == readFile(Self.mnt + report) else {
            throw .failure("demo: \(Self.mnt + report) does not read the same as \(Self.container + report)")
        }
        transcript.output("(identical)")
        let line = "written through the mount"
        transcript.command(["echo", line], redirect: "> \(Self.mnt)/Documents/new.txt")
        do throws(Errno) {
            let file = try FileDescriptor.open(path: Self.mnt + "/Documents/new.txt",
                                               flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644)
            do throws(Errno) { try file.writeAll(line + "\n") } catch {
                file.closeQuietly()
                throw error
            }
            try file.close()
        } catch {
            throw .failure("demo: cannot write \(session.mountPath)/Documents/new.txt: \(error)")
        }
        transcript.command(["cat", Self.container + "/Documents/new.txt"])
        transcript.output(String(decoding: try readFile(Self.container + "/Documents/new.txt"), as: UTF8.self))
    }

    private func extendedAttributes() throws(CommandExit) {
        try step("Extended attributes pass through, both ways")
        let file = "/" + DemoSample.taggedFile
        let tag = DemoSample.tag
        transcript.command(["getfattr", "-n", tag.name, "--only-values", Self.mnt + file])
        transcript.output(try attributeText(tag.name, of: Self.mnt + file))
        let reviewed = "user.demo.reviewed"
        transcript.command(["setfattr", "-n", reviewed, "-v", "yes", Self.mnt + file])
        do throws(Errno) {
            try Paths.setExtendedAttribute(reviewed, of: Self.mnt + file, to: Array("yes".utf8))
        } catch {
            throw .failure("demo: cannot set \(reviewed) on \(session.mountPath + file): \(error)")
        }
        transcript.command(["getfattr", "-n", reviewed, "--only-values", Self.container + file])
        transcript.output(try attributeText(reviewed, of: Self.container + file))
    }

    private func clones() throws(CommandExit) {
        try step("Copying inside the mount makes a clone: it shares the data until one of them changes")
        let original = Self.mnt + "/Documents/report.pdf", copy = Self.mnt + "/Documents/report-copy.pdf"
        let allocated = try access.number(.allocated, of: Self.mnt)
        try session.purgefs(["clone", original, copy])
        try cloneFigures(original, copy)
        transcript.note("Root allocated was \(allocated) before the clone: the copy took no space. Its first change "
            + "gives it data of its own for the blocks it changes, and it shares the rest: the filesystem's reflinks "
            + "on XFS and btrfs, purgefs's own 64 KiB blocks elsewhere (ext4).")
        transcript.command(["echo", "edited"], redirect: ">> \(copy)")
        do throws(Errno) {
            let file = try FileDescriptor.open(path: copy, flags: O_WRONLY | O_APPEND | O_NOFOLLOW)
            defer { file.closeQuietly() }
            try file.writeAll("edited\n")
        } catch {
            throw .failure("demo: cannot append to \(session.base)/\(copy): \(error)")
        }
        try cloneFigures(original, copy)
        transcript.command(["rm", copy])
        do throws(Errno) { try Paths.removeTree(copy) } catch {
            throw .failure("demo: cannot remove \(session.base)/\(copy): \(error)")
        }
    }

    /// `content_id` and `shared` of both files, and the root's allocation and clone savings.
    private func cloneFigures(_ original: String, _ copy: String) throws(CommandExit) {
        transcript.command(["getfattr", "-n", "user.purgefs.NAME", "--only-values", original, copy, Self.mnt])
        var rows: [String] = []
        for path in [original, copy] {
            for attribute: PurgeAttribute in [.contentID, .shared] {
                rows.append(HumanText.left(attribute.rawValue, 14) + " " + String(try access.number(attribute, of: path))
                    + "  " + path)
            }
        }
        for attribute: PurgeAttribute in [.allocated, .cloneSavings] {
            rows.append(HumanText.left(attribute.rawValue, 14) + " " + String(try access.number(attribute, of: Self.mnt))
                + "  " + Self.mnt)
        }
        transcript.rows(rows)
    }

    private func hiddenState() throws(CommandExit) {
        try step("purgefs keeps its state in the container (.purgefs), but the mount does not show it")
        for directory in [Self.container, Self.mnt] {
            transcript.command(["ls", "-a", directory])
            let names = try DemoTree.names(in: directory)
            transcript.output((["." , ".."] + names).joined(separator: "  "))
        }
    }

    /// Shows the root's and some subtrees' figures; returns Documents' for the end.
    private func accounting() throws(CommandExit) -> DirectoryFigures {
        try step("Accounting: user.purgefs.* on the container root, exact at each read")
        transcript.command(["getfattr", "-n", "user.purgefs.NAME", "--only-values", Self.mnt])
        let attributes: [PurgeAttribute] = [.capacity, .external, .available, .availableImportant,
                                            .availableOpportunistic, .size, .files, .allocated, .purgeable,
                                            .purgedBytes, .purgedFiles]
        var rows: [String] = []
        for attribute in attributes {
            let value = try access.number(attribute, of: Self.mnt)
            let counts = attribute == .files || attribute == .purgedFiles
            rows.append(HumanText.left(attribute.rawValue, 24) + HumanText.right(String(value), 10)
                + (counts ? "" : "  (\(HumanText.size(value)))"))
        }
        transcript.rows(rows)

        try step("...and on any directory, recursively")
        transcript.command(["getfattr", "-n", "user.purgefs.NAME", "--only-values", Self.mnt + "/DIR"])
        var documents = DirectoryFigures.zero
        rows = [HumanText.left("DIR", 16) + HumanText.right("size", 10) + HumanText.right("files", 7)
            + HumanText.right("purgeable", 11)]
        for directory in ["Documents"] + DemoSample.zones {
            guard let figures = try DirectoryFigures.readIfPresent(Self.mnt + "/" + directory, access) else {
                throw .failure("demo: \(session.mountPath)/\(directory) answers no user.purgefs.files")
            }
            if directory == "Documents" { documents = figures }
            rows.append(HumanText.left(directory, 16) + HumanText.right(HumanText.size(figures.size), 10)
                + HumanText.right(String(figures.files), 7) + HumanText.right(HumanText.size(figures.purgeable), 11))
        }
        transcript.rows(rows)
        return documents
    }

    private func manualPurge() throws(CommandExit) {
        try step("Purge on request: ask for \(DemoSample.manualPurge) back, least recently used first")
        try purgeableFiles()
        try session.purgefs(["purge", Self.mnt, "--bytes", DemoSample.manualPurge])
        try purgeableFiles()
    }

    /// The files in the purgeable zones, least recently used first, with
    /// their size and `user.purgefs.last_used`.
    private func purgeableFiles() throws(CommandExit) {
        let zones = DemoSample.zones.map { Self.mnt + "/" + $0 }
        transcript.command(["find"] + zones + ["-type", "f"], redirect: "# with user.purgefs.last_used, oldest first")
        var files: [(path: String, size: Int64, lastUsed: UInt64)] = []
        for zone in zones {
            for entry in try DemoTree.entries(under: zone) where entry.type == "f" {
                let path = zone + "/" + entry.path
                // A file purged since the listing has no attribute to read any more.
                guard let lastUsed = try access.numberIfAnswered(.lastUsed, of: path) else { continue }
                files.append((path, entry.size, lastUsed))
            }
        }
        files.sort { ($0.lastUsed, $0.path) < ($1.lastUsed, $1.path) }
        let now = WallClock.seconds()
        transcript.output(files.isEmpty ? "(none: nothing purgeable is left)" : files.map { file in
            HumanText.right(String(file.size), 9) + "  " + HumanText.left(HumanText.age(of: Double(file.lastUsed), now: now), 8)
                + "  " + file.path
        }.joined(separator: "\n"))
    }

    private func pressure() throws(CommandExit) {
        try step("Pressure: shrink the device until less than low=\(DemoSample.low >> 20)M is available")
        let capacity = try access.number(.capacity, of: Self.mnt)
        let available = try access.number(.available, of: Self.mnt)
        let purgedFiles = try access.number(.purgedFiles, of: Self.mnt)
        let purgedBytes = try access.number(.purgedBytes, of: Self.mnt)
        let squeezed = DemoSample.squeezedCapacity(capacity: capacity, available: available)
        transcript.note("\(HumanText.size(available)) is available now. A capacity of \(squeezed >> 20)M leaves "
            + "about \(HumanText.size(squeezed.clampedMinus(capacity - available))) (the same as setfattr -n "
            + "user.purgefs.capacity on the root):")
        let started = WallClock.seconds()
        try session.purgefs(["space", Self.mnt, "--capacity", "\(squeezed >> 20)M"])

        // The monitor looks at least once a second: poll its work against a deadline.
        let deadline = started + 10
        var figures = try DeviceFigures.read(root: Self.mnt, access)
        while figures.available < DemoSample.high && figures.purgeable > 0 {
            guard WallClock.seconds() < deadline else {
                throw .failure("demo: the space monitor did not purge within 10 s (available \(figures.available), "
                    + "purgeable \(figures.purgeable) bytes)")
            }
            try session.checkInterrupted()
            CurrentProcess.sleep(milliseconds: 20)
            figures = try DeviceFigures.read(root: Self.mnt, access)
        }
        let seconds = Int(((WallClock.seconds() - started) * 10).rounded(.up))
        let files = figures.purgedFiles.clampedMinus(purgedFiles)
        transcript.note("Within \(seconds / 10).\(seconds % 10) s the space monitor purged "
            + "\(HumanText.count(files, "file")) (\(HumanText.size(figures.purgedBytes.clampedMinus(purgedBytes)))), "
            + "least recently used first, aiming for high=\(DemoSample.high >> 20)M available: "
            + "\(HumanText.size(figures.available)) is available now, \(HumanText.size(figures.purgeable)) purgeable.")
        try diskFree()
        try purgeableFiles()
    }

    private func noSpace(documentsBefore: DirectoryFigures) throws(CommandExit) {
        try step("A write that does not fit fails with ENOSPC once nothing purgeable is left")
        let available = try access.number(.available, of: Self.mnt)
        let purgeable = try access.number(.purgeable, of: Self.mnt)
        transcript.note("available \(HumanText.size(available)), purgeable \(HumanText.size(purgeable)): "
            + "a write first purges what it can, and fails only when that is not enough.")
        let path = Self.mnt + "/Documents/too-big.bin"
        let length = available + (1 << 20)
        transcript.command(["head", "-c", String(length), "/dev/zero"], redirect: "> \(path)")
        let (written, error) = writeZeros(length, to: path)
        guard let error else {
            throw .failure("demo: writing \(length) bytes into \(session.mountPath)/Documents did not fail, "
                + "with \(available) bytes available and \(purgeable) purgeable")
        }
        guard error == .noSpace else {
            throw .failure("demo: writing \(session.base)/\(path) failed with \(error), not ENOSPC")
        }
        transcript.output("write: \(error) (ENOSPC), after \(HumanText.size(written)) of \(HumanText.size(length))")
        transcript.command(["rm", path])
        do throws(Errno) { try Paths.removeTree(path) } catch {
            if error != .noEntry { throw .failure("demo: cannot remove \(session.base)/\(path): \(error)") }
        }

        transcript.command(["getfattr", "-n", "user.purgefs.size", "--only-values", Self.mnt + "/Documents"])
        guard let documents = try DirectoryFigures.readIfPresent(Self.mnt + "/Documents", access) else {
            throw .failure("demo: \(session.mountPath)/Documents is gone")
        }
        transcript.output(String(documents.size))
        guard documents.size == documentsBefore.size, documents.files == documentsBefore.files else {
            throw .failure("demo: Documents changed: \(documentsBefore.files) files of \(documentsBefore.size) bytes "
                + "before, \(documents.files) of \(documents.size) now")
        }
        transcript.note("The same \(HumanText.count(documents.files, "file")) and bytes as before the squeeze: "
            + "Documents is intact, purging only ever deletes files in purgeable zones.")
        transcript.command(["find", Self.mnt + "/Documents", "-type", "f"])
        transcript.output(try DemoTree.entries(under: Self.mnt + "/Documents").filter { $0.type == "f" }
            .map { Self.mnt + "/Documents/" + $0.path }.joined(separator: "\n"))
    }

    /// Writes `length` zero bytes into a new file at `path`, as `head -c`
    /// does; returns how much was written and the error that stopped it.
    private func writeZeros(_ length: UInt64, to path: String) -> (UInt64, Errno?) {
        let file: FileDescriptor
        do throws(Errno) {
            file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644)
        } catch {
            return (0, error)
        }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var written: UInt64 = 0
        var failure: Errno?
        while written < length, failure == nil {
            let count = Int(min(UInt64(zeros.count), length - written))
            do throws(Errno) {
                let offset = Int64(written)
                written += UInt64(try zeros.withUnsafeBytes { bytes in
                    Result { () throws(Errno) in try file.write(UnsafeRawBufferPointer(rebasing: bytes[..<count]), at: offset) }
                }.get())
            } catch {
                failure = error
            }
        }
        if failure == nil {
            do throws(Errno) { try file.sync() } catch { failure = error }
        }
        do throws(Errno) { try file.close() } catch { if failure == nil { failure = error } }
        return (written, failure)
    }

    private func unmount() throws(CommandExit) {
        try step("Unmount")
        try session.purgefs(["unmount", Self.mnt])
        if OwnMount.purgefsMount(at: session.mountPath) != nil {
            throw .failure("demo: \(session.mountPath) is still mounted after purgefs unmount")
        }
        transcript.note("mnt is gone from /proc/self/mountinfo. The container keeps everything outside the "
            + "purgeable zones:")
        transcript.command(["find", Self.container + "/Documents", "-type", "f"])
        transcript.output(try DemoTree.entries(under: Self.container + "/Documents").filter { $0.type == "f" }
            .map { Self.container + "/Documents/" + $0.path }.joined(separator: "\n"))
    }

    // MARK: Reading

    private func readFile(_ path: String) throws(CommandExit) -> [UInt8] {
        do throws(Errno) {
            return try FileDescriptor.readFile(path, limit: 64 << 20)
        } catch {
            throw .failure("demo: cannot read \(session.base)/\(path): \(error)")
        }
    }

    private func attributeText(_ name: String, of path: String) throws(CommandExit) -> String {
        do throws(Errno) {
            return String(decoding: try Paths.extendedAttribute(name, of: path), as: UTF8.self)
        } catch {
            throw .failure("demo: cannot read \(name) of \(session.base)/\(path): \(error)")
        }
    }
}
