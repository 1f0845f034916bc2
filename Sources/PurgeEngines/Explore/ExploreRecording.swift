import Glibc
import PurgeCore
import PurgeSys

/// The recording half of `purgefs explore`: a work directory
/// (`$TMPDIR/purgefs-explore.XXXXXX`) with the base copy of the container
/// (`base`, never mounted), the copy that is mounted and run on (`run`), and
/// the operation log (`record`: `operations`, `data`, and the FIFO `output`
/// that is the command's stdout). The container itself is only read.
final class ExploreRecording {
    let work: String
    var base: String { work + "/base" }
    var runCopy: String { work + "/run" }
    var record: String { work + "/record" }
    private var outputPath: String { work + "/.output" }
    private(set) var daemon: ProcessID?
    private(set) var mounted = false

    init(work: String) {
        self.work = work
    }

    /// Copies `container` twice (`cp -a --reflink=auto`, without `.purgefs`).
    func copy(_ container: String) throws(CommandExit) {
        for target in [base, runCopy] {
            let status: WaitStatus, output: String
            do throws(Errno) {
                try Paths.makeDirectory(target, mode: 0o755)
                (status, output) = try OwnMount.capture(
                    "cp", arguments: ["cp", "-a", "--reflink=auto", "--", container + "/.", target], outputPath: outputPath)
                if status.exitCode == 0 {
                    try OwnMount.removeWithPatience(target + "/" + MountOptions.defaultStateDirectoryName, missingIsFine: true)
                }
            } catch {
                throw .failure("explore: cannot copy \(container): \(error)")
            }
            guard status.exitCode == 0 else {
                throw .failure("explore: cannot copy \(container): cp \(OwnMount.reason(output, status))")
            }
        }
        try? Paths.makeDirectory(record, mode: 0o700)
    }

    /// The tree of `root` (lstat of every entry, parents first, names in
    /// byte order), as the exploration model starts from it.
    static func walk(_ root: String) throws(Errno) -> [CrashExploration.InitialEntry] {
        let top = try Paths.linkStatus(root)
        var entries = [CrashExploration.InitialEntry(path: "", id: ExploreRecording.identity(top), kind: .directory, mode: UInt32(top.st_mode & 0o7777))]
        func visit(_ relative: String) throws(Errno) {
            let path = relative.isEmpty ? root : root + "/" + relative
            let names = try Paths.names(in: path).map { Array($0.utf8) }
            for name in names.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let leaf = String(decoding: name, as: UTF8.self)
                let child = relative.isEmpty ? leaf : relative + "/" + leaf
                let status = try Paths.linkStatus(root + "/" + child)
                let kind: RecordedOperation.EntryKind
                var target: [UInt8] = []
                switch status.st_mode & S_IFMT {
                case S_IFREG: kind = .file
                case S_IFDIR: kind = .directory
                case S_IFLNK:
                    kind = .symbolicLink
                    target = try Paths.symbolicLinkTarget(root + "/" + child)
                default: kind = .other
                }
                entries.append(CrashExploration.InitialEntry(path: child, id: ExploreRecording.identity(status), kind: kind, mode: UInt32(status.st_mode & 0o7777),
                                                             size: UInt64(max(0, status.st_size)), target: target))
                if kind == .directory { try visit(child) }
            }
        }
        try visit("")
        return entries
    }

    static func identity(_ status: stat) -> EntryID {
        EntryID(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// `purgefs mount run -o record=...,OPTIONS`.
    func mount(options: [String]) throws(CommandExit) {
        let arguments = ["mount", runCopy, "-o", "record=" + record] + options.flatMap { ["-o", $0] }
        let (status, output): (WaitStatus, String)
        do throws(Errno) {
            (status, output) = try OwnMount.purgefs(arguments, outputPath: outputPath)
        } catch {
            throw .failure("explore: cannot run purgefs mount: \(error)")
        }
        guard status.exitCode == 0, OwnMount.purgefsMount(at: runCopy) != nil else {
            throw .failure("explore: cannot mount the copy of the container: \(OwnMount.reason(output, status))")
        }
        mounted = true
        daemon = OwnMount.daemon(at: runCopy)
    }

    /// Unmounts and waits for the daemon; returns what went wrong.
    func unmount() -> String? {
        guard mounted else { return nil }
        if daemon == nil { daemon = OwnMount.daemon(at: runCopy) }
        if let problem = OwnMount.unmount(runCopy) { return "explore: \(problem)" }
        OwnMount.waitForExit(daemon)
        mounted = false
        return nil
    }

    /// Removes the work directory (after `unmount`).
    func remove() {
        _ = try? OwnMount.removeWithPatience(work, missingIsFine: true)
    }
}
