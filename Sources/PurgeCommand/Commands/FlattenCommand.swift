import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs flatten MOUNTPOINT [PATH]`: every file under PATH that shares
/// data through purgefs (a linked clone, or the original one shares with)
/// gets data of its own, so the container holds plain files when it leaves
/// purgefs. Per file, through `user.purgefs.flatten` (the daemon's break, as
/// a first write makes it), so each file is done or untouched.
struct FlattenCommand: Subcommand {
    static let name = "flatten"
    static let abstract = "Give files that share data through purgefs data of their own"
    static var help: String {
        """
        Usage: purgefs flatten MOUNTPOINT [PATH]

        \(TextLayout.paragraph(
            "Makes every file under PATH (a file or directory in the purgefs mount at MOUNTPOINT; the whole "
            + "mount without PATH) that shares data through purgefs a plain file of its own. On a backing "
            + "filesystem without reflinks (ext4) a clone and its original are hard links of one inode in the "
            + "backing directory until one of them is written (user.purgefs.flat is 0 on both): unmounted, "
            + "writing one would change the other. Flattening copies the data, as the first write would, "
            + "asking for room first (purging if needed); a reflink clone is a plain file already."))

        \(TextLayout.paragraph(
            "Shows its progress on stderr (files done of those to flatten, bytes copied), prints a summary, "
            + "and exits 0 once every file under PATH is flat. When there is no room for a file's copy it "
            + "stops with an error naming the file; the file keeps sharing and nothing is lost. "
            + "purgefs unmount --flatten flattens the whole mount before unmounting."))

        Flags:
        \(flags.rows)
        """
    }
    /// No flags but `--help`.
    static let flags = FlagTable<Self>(name, [])

    var mountArgument = ""
    var pathArgument: String?
    var access = AttributeAccess.live
    /// Set by `validate()`: the mount point and the canonical PATH.
    private(set) var root = ""
    private(set) var path = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        guard let mount = parsed.paths.first else {
            throw .usage("flatten: MOUNTPOINT is missing (see purgefs flatten --help)")
        }
        guard parsed.paths.count <= 2 else { throw .usage("flatten: unexpected argument '\(parsed.paths[2])'; give MOUNTPOINT [PATH]") }
        guard !parsed.paths.contains("") else { throw .usage("flatten: an empty path was given") }
        mountArgument = mount
        pathArgument = parsed.paths.count == 2 ? parsed.paths[1] : nil
    }

    mutating func validate() throws(CommandExit) {
        let mount = try MountLocation.mountPoint(mountArgument)
        root = mount.path
        guard let pathArgument else {
            path = root
            return
        }
        let location = try MountLocation.find(pathArgument)
        guard location.mount == mount.mount else {
            throw .failure("\(location.path) is not inside the purgefs mount at \(root)")
        }
        path = location.path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        print(try Flattening(access: access).flatten(path).summary(of: path))
    }
}

/// Flattens the files under a path of a purgefs mount, one by one through
/// `user.purgefs.flatten`, with a progress line on stderr (`purgefs flatten`,
/// `purgefs unmount --flatten`).
struct Flattening {
    var access: AttributeAccess
    /// Seconds between progress lines when stderr is not a terminal.
    static let quietInterval: Int64 = 5

    struct Outcome {
        var flattened = 0
        var bytes: UInt64 = 0

        func summary(of path: String) -> String {
            if flattened == 0 { return "Nothing to flatten: every file under \(path) is flat." }
            return "Flattened \(HumanText.count(UInt64(flattened), "file")), copying \(HumanText.size(bytes)) "
                + "(\(bytes) bytes): every file under \(path) is flat."
        }
    }

    /// Flattens every file under `path` whose `flat` is `0`; fails naming the
    /// first file that could not be, or that is not flat afterwards.
    func flatten(_ path: String) throws(CommandExit) -> Outcome {
        let candidates = try notFlat(under: path)
        var outcome = Outcome()
        var progress = Progress(total: candidates.count)
        for (file, size) in candidates {
            // Breaking a file may have left the others of its group flat already.
            guard try isFlat(file) == false else { continue }
            do throws(Errno) {
                try access.write(PurgeAttribute.flatten.fullName, file, Array("1".utf8))
            } catch {
                progress.end()
                if error == .noSpace {
                    throw .failure("cannot flatten \(file): no room for its copy of \(HumanText.size(size)) (No space left on device); "
                                   + "it still shares its data and nothing was lost: free space and run purgefs flatten again")
                }
                throw .failure("cannot flatten \(file): \(error)")
            }
            outcome.flattened += 1
            outcome.bytes += size
            progress.done(bytes: outcome.bytes)
        }
        progress.end()
        for (file, _) in candidates where try isFlat(file) == false {
            throw .failure("\(file) still shares its data through purgefs (changed while flattening?); run purgefs flatten again")
        }
        return outcome
    }

    /// The regular files at or under `path` whose `flat` is `0`, with their sizes.
    private func notFlat(under path: String) throws(CommandExit) -> [(String, UInt64)] {
        let files: [(String, stat)]
        do throws(Errno) {
            let opened = try FileDescriptor.open(path: path, flags: O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
            defer { opened.closeQuietly() }
            let status = try opened.status()
            switch status.st_mode & S_IFMT {
            case S_IFREG: files = [(path, status)]
            case S_IFDIR: files = try TreeWalk(root: opened).regularFiles().map { (path + "/" + $0.0, $0.1) }
            default: files = []
            }
        } catch {
            throw .failure("\(path): \(error)")
        }
        var found: [(String, UInt64)] = []
        for (file, status) in files where try isFlat(file) == false {
            found.append((file, UInt64(status.st_size)))
        }
        return found
    }

    /// `user.purgefs.flat`; nil for a file gone meanwhile.
    private func isFlat(_ file: String) throws(CommandExit) -> Bool? {
        try access.numberIfAnswered(.flat, of: file).map { $0 != 0 }
    }

    /// The line on stderr: rewritten after every file on a terminal, else
    /// one line every `quietInterval` seconds.
    struct Progress {
        let total: Int
        var done = 0
        let terminal = isatty(STDERR_FILENO) == 1
        var lastLine = Progress.now()
        var shown = false

        init(total: Int) { self.total = total }

        mutating func done(bytes: UInt64) {
            done += 1
            let line = "flatten: \(done)/\(total) files, \(HumanText.size(bytes)) copied"
            if terminal {
                write("\r" + line + "\u{1B}[K")
                shown = true
            } else if Progress.now() - lastLine >= Flattening.quietInterval {
                write(line + "\n")
                lastLine = Progress.now()
            }
        }

        mutating func end() {
            if shown { write("\n") }
            shown = false
        }

        private func write(_ text: String) {
            try? FileDescriptor.standardError.writeAll(text)
        }

        static func now() -> Int64 {
            var time = timespec()
            clock_gettime(CLOCK_MONOTONIC, &time)
            return Int64(time.tv_sec)
        }
    }
}
