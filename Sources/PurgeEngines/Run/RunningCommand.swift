import Glibc
import PurgeSys

/// The command `purgefs run` supervises, as a scenario sees it: a `crash`
/// step kills its process group (SIGKILL, as a power loss would) before the
/// mount crashes, and a `restart` step (or `--restart-after-crash`) starts
/// it again on the crashed state.
final class RunningCommand {
    /// The command's process (its group's leader), while it runs.
    var pid: ProcessID?
    /// Killed by a crash step and not started again since.
    private(set) var crashed = false
    /// How it ended when the crash killed it.
    private(set) var crashedStatus: WaitStatus?
    private(set) var restarts = 0
    private let starter: () throws(Errno) -> ProcessID

    init(start: @escaping () throws(Errno) -> ProcessID) {
        starter = start
    }

    func start() throws(Errno) {
        pid = try starter()
    }

    /// SIGKILL to the whole group, and waits for the leader.
    func killForCrash() {
        guard let pid else { return }
        try? ProcessGroup.signal(pid, SIGKILL)
        crashedStatus = try? ChildProcess.wait(pid)
        self.pid = nil
        crashed = true
    }

    func restart() throws(Errno) {
        if let pid {
            try? ProcessGroup.signal(pid, SIGKILL)
            _ = try? ChildProcess.wait(pid)
        }
        pid = try starter()
        crashed = false
        restarts += 1
    }
}
