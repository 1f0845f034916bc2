import PurgeCore
import PurgeSys

/// Removing a purgefs mount, and only a purgefs mount, as `purgefs unmount`
/// does: find the mount at a path (`find`), then unmount it and wait until
/// the kernel's mount table no longer lists it and its daemon has ended
/// (`remove`). `OwnMount.unmount` uses it for the mounts `run`, `demo` and
/// `explore` make.
public enum MountRemoval {
    /// How long to wait for the mount to leave the table after unmounting.
    public static let deadlineMilliseconds = 10_000
    /// How long a daemon may take to answer a `statfs` before it counts as hung.
    public static let probeMilliseconds = 3_000

    /// The absolute mountpoint of `pathArgument` and the purgefs mount on top there.
    public static func find(_ pathArgument: String) throws(CommandExit) -> (mountpoint: String, mount: MountTable.Entry) {
        // realpath fails with ENOTCONN on a mount whose daemon died; that
        // mount must still be removable, so fall back to the lexical path.
        let canonical = Result { () throws(Errno) in try Paths.canonical(pathArgument) }
        let mountpoint = (try? canonical.get()) ?? Self.absolutePath(pathArgument)
        let table: MountTable
        do throws(Errno) {
            table = try MountTable.current()
        } catch {
            throw .failure("cannot read /proc/self/mountinfo: \(error)")
        }
        guard let top = table.topmost(at: mountpoint) else {
            if case .failure(.noEntry) = canonical { throw .failure("\(mountpoint) does not exist") }
            throw .failure("\(mountpoint) is not a mount point")
        }
        guard top.isPurgefs else {
            throw .failure("\(mountpoint) is a \(top.fileSystemType) mount, not a purgefs mount")
        }
        return (mountpoint, top)
    }

    /// Unmounts `mount` at `mountpoint` (`force`: as `--force` does) and waits until it is gone and its daemon has ended.
    public static func remove(_ mount: MountTable.Entry, at mountpoint: String, force: Bool) throws(CommandExit) {
        if force {
            try forceUnmount(mount, at: mountpoint)
            try Self.waitUntilGone(mount, deadline: Deadline(milliseconds: Self.deadlineMilliseconds))
            return
        }
        // Who serves it, asked before it goes: its runtime record goes with it.
        let daemon = (try? RuntimeRecordLocator.record(of: mount, at: mountpoint)).flatMap { record in
            let pid = ProcessID(rawValue: record.processID)
            return pid.status.map { (pid, $0.startTime) }
        }
        if CurrentProcess.effectiveUserID == 0 {
            do throws(Errno) {
                try Paths.unmount(mountpoint)
            } catch {
                throw .failure(error == .busy
                    ? "\(mountpoint) is busy: " + (FuseConnection.daemonAnswers(at: mountpoint, within: Self.probeMilliseconds)
                        ? "a process has a file open or its working directory inside"
                        : "its daemon is not answering (purgefs unmount --force \(mountpoint) aborts its connection)")
                    : "cannot unmount \(mountpoint): \(error)")
            }
        } else {
            try Self.fusermountUnmount(mountpoint)
        }
        let deadline = Deadline(milliseconds: Self.deadlineMilliseconds)
        try Self.waitUntilGone(mount, deadline: deadline)
        // The daemon lets go of the container (its state lock) only when it
        // ends: returning before would refuse a `purgefs mount` run next.
        if let (pid, started) = daemon {
            try Self.waitForEnd(of: pid, startedAt: started, serving: mountpoint, deadline: deadline)
        }
    }

    /// `--force`: a mount that does not simply unmount (busy, or its daemon
    /// dead or hung) has its connection aborted first, so that no process
    /// stays stuck on it, and is then detached.
    private static func forceUnmount(_ mount: MountTable.Entry, at mountpoint: String) throws(CommandExit) {
        guard CurrentProcess.effectiveUserID == 0 else {
            throw .failure("unmount --force needs root (it writes to /sys/fs/fuse/connections)")
        }
        if FuseConnection.daemonAnswers(at: mountpoint, within: Self.probeMilliseconds), (try? Paths.unmount(mountpoint)) != nil {
            return
        }
        guard let number = mount.deviceMinor else {
            throw .failure("cannot tell the FUSE connection of \(mountpoint) from /proc/self/mountinfo")
        }
        do throws(Errno) {
            try FuseConnection(number: number).abort()
        } catch where error != .noEntry {
            throw .failure("cannot abort the FUSE connection \(number) of \(mountpoint): \(error)")
        } catch {}  // gone already: the kernel aborted it when the daemon's last descriptor closed
        do throws(Errno) { try Paths.detach(mountpoint) } catch {
            throw .failure("cannot detach \(mountpoint): \(error)")
        }
    }

    /// Runs `fusermount3 -u -- MOUNTPOINT`; its complaint, if any, becomes our one line.
    private static func fusermountUnmount(_ mountpoint: String) throws(CommandExit) {
        let child: PipedChild
        do throws(PipedChild.Failure) {
            child = try PipedChild.start("fusermount3", arguments: ["fusermount3", "-u", "--", mountpoint],
                                         environment: CurrentProcess.environment, pipeAs: .standardError, searchPath: true)
        } catch {
            switch error {
            case .pipe(let error): throw .failure("cannot create a pipe: \(error)")
            case .spawn(let error): throw .failure("cannot run fusermount3: \(error)")
            }
        }
        defer { child.output.closeQuietly() }
        let output = (try? child.output.readAll(limit: 65536)) ?? []
        let status: WaitStatus
        do throws(Errno) {
            status = try ChildProcess.wait(child.pid)
        } catch {
            throw .failure("cannot wait for fusermount3: \(error)")
        }
        guard status.exitCode != 0 else { return }
        let lastLine = String(decoding: output, as: UTF8.self).split(whereSeparator: \.isNewline).last.map(String.init)
        let reason = lastLine.map { $0.hasPrefix("fusermount3: ") ? String($0.dropFirst("fusermount3: ".count)) : $0 }
        throw .failure("cannot unmount \(mountpoint): " + (reason ?? "fusermount3 \(status)"))
    }

    /// Polls the mount table until `mount` (by ID) is gone, against `deadline`.
    private static func waitUntilGone(_ mount: MountTable.Entry, deadline: Deadline) throws(CommandExit) {
        while let table = try? MountTable.current(), table.contains(id: mount.id) {
            guard !deadline.hasPassed else {
                throw .failure("\(mount.mountPoint) is still mounted \(deadlineMilliseconds / 1000) s after unmounting")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    /// Polls until the daemon `pid` has ended, against `deadline`.
    private static func waitForEnd(of pid: ProcessID, startedAt started: UInt64, serving mountpoint: String,
                                   deadline: Deadline) throws(CommandExit) {
        while !pid.hasEnded(startedAt: started) {
            guard !deadline.hasPassed else {
                throw .failure("\(mountpoint) is unmounted, but its daemon (pid \(pid)) has not ended "
                    + "\(deadlineMilliseconds / 1000) s later: it still holds the container, so a new mount of it is refused")
            }
            CurrentProcess.sleep(milliseconds: 10)
        }
    }

    /// An absolute path without touching the named file: for a mountpoint
    /// whose daemon died, where `realpath` fails with `ENOTCONN`.
    static func absolutePath(_ path: String) -> String {
        let joined = path.hasPrefix("/") ? path : ((try? Paths.workingDirectory()) ?? "/") + "/" + path
        return AbsolutePath.normalise(joined) ?? joined
    }
}
