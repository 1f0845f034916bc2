import Glibc
import PurgeCore
import PurgeSys

/// Where `purgefs explore` records: a work directory
/// (`$TMPDIR/purgefs-explore.XXXXXX`) with the base copy of the container
/// (`base`, never mounted), the copy that is mounted with `record=` and run
/// on (`run`), and the directory the daemon's `OperationRecorder` writes the
/// operation log into (`record`: `operations`, `data`, and the FIFO `output`
/// that is the command's stdout), which `OperationLog` reads. The container
/// itself is only read.
final class ExploreWorkspace {
    let work: String
    var base: String { work + "/base" }
    var runCopy: String { work + "/run" }
    var record: String { work + "/record" }
    private var outputPath: String { work + "/.output" }
    private(set) var daemon: ProcessID?
    private(set) var mounted = false

    /// The binary that mounts the copy (`purgefs mount`): this one
    /// (`/proc/self/exe`) when the command explores.
    let purgefs: String

    init(work: String, purgefs: String = "/proc/self/exe") {
        self.work = work
        self.purgefs = purgefs
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

    /// `purgefs mount run -o record=...,OPTIONS`, with `purgefs`.
    func mount(options: [String]) throws(CommandExit) {
        let arguments = ["mount", runCopy, "-o", "record=" + record] + options.flatMap { ["-o", $0] }
        let (status, output): (WaitStatus, String)
        do throws(Errno) {
            (status, output) = try OwnMount.capture(purgefs, arguments: ["purgefs"] + arguments, outputPath: outputPath)
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
