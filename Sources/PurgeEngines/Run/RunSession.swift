import Glibc
import PurgeCore
import PurgeSys

/// The mount `purgefs run` makes and takes down: a scratch directory of its
/// own (for the output of the purgefs children it runs, and with
/// `--scratch` the copy of the container), the mount in place, the daemon.
final class RunSession {
    /// `$TMPDIR/purgefs-run.XXXXXX`, removed by `tearDown`.
    let base: String
    /// What is mounted (in place): the container, or its copy in `base`.
    let mountpoint: String
    let scratch: Bool
    private(set) var daemon: ProcessID?
    private var outputPath: String { base + "/.output" }

    private init(base: String, mountpoint: String, scratch: Bool) {
        self.base = base
        self.mountpoint = mountpoint
        self.scratch = scratch
    }

    /// Makes the scratch directory and, with `scratch`, copies `container`
    /// into it (`cp -a --reflink=auto`, without its state directory
    /// `.purgefs`: the copy's inode numbers differ, and its state starts afresh).
    static func prepare(container: String, scratch: Bool) throws(CommandExit) -> RunSession {
        let base = try OwnMount.scratchDirectory("purgefs-run")
        let session = RunSession(base: base, mountpoint: scratch ? base + "/container" : container, scratch: scratch)
        guard scratch else { return session }
        do throws(CommandExit) {
            try session.copy(container)
        } catch {
            _ = try? OwnMount.removeWithPatience(base, missingIsFine: true)
            throw error
        }
        return session
    }

    private func copy(_ container: String) throws(CommandExit) {
        let status: WaitStatus
        var copyOutput = ""
        do throws(Errno) {
            try Paths.makeDirectory(mountpoint, mode: 0o700)
            let output: String
            (status, output) = try OwnMount.capture(
                "cp", arguments: ["cp", "-a", "--reflink=auto", "--", container + "/.", mountpoint], outputPath: outputPath)
            copyOutput = output
            if status.exitCode == 0 {
                try OwnMount.removeWithPatience(mountpoint + "/" + MountOptions.defaultStateDirectoryName, missingIsFine: true)
            }
        } catch {
            throw .failure("run: cannot copy \(container) for --scratch: \(error)")
        }
        guard status.exitCode == 0 else {
            throw .failure("run: cannot copy \(container) for --scratch: cp \(OwnMount.reason(copyOutput, status))")
        }
    }

    /// `purgefs mount MOUNTPOINT [-o OPTIONS]`, in place: returns once the mount is usable.
    func mount(options: [String]) throws(CommandExit) {
        let (status, output) = try purgefs(["mount", mountpoint] + options.flatMap { ["-o", $0] })
        guard status.exitCode == 0 else {
            throw .failure("run: cannot mount \(mountpoint): \(OwnMount.reason(output, status))")
        }
        guard OwnMount.purgefsMount(at: mountpoint) != nil else {
            throw .failure("run: purgefs mount returned, but \(mountpoint) is not a purgefs mount")
        }
        daemon = OwnMount.daemon(at: mountpoint)
    }

    /// Runs a subcommand of this binary, its output captured.
    func purgefs(_ arguments: [String]) throws(CommandExit) -> (WaitStatus, String) {
        do throws(Errno) {
            return try OwnMount.purgefs(arguments, outputPath: outputPath)
        } catch {
            throw .failure("run: cannot run purgefs \(arguments.first ?? ""): \(error)")
        }
    }

    /// Unmounts, waits for the daemon to save and end, removes the scratch
    /// directory (the copy with it). Returns what could not be done.
    func tearDown() -> String? {
        if daemon == nil { daemon = OwnMount.daemon(at: mountpoint) }
        if let problem = OwnMount.unmount(mountpoint) {
            return "run: \(problem)" + (scratch ? "; left \(base) in place" : "")
        }
        OwnMount.waitForExit(daemon)
        do throws(Errno) {
            try OwnMount.removeWithPatience(base, missingIsFine: true)
        } catch {
            return "run: cannot remove \(base): \(error)"
        }
        return nil
    }
}
