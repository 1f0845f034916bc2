import Glibc
import PurgeSys
import Synchronization

/// Named steps of changes that must survive `kill -9` or a race anywhere
/// (a linked clone made, broken, renamed, looked up): in a debug build,
/// `PURGEFS_KILL_AT=STEP` kills the daemon (`SIGKILL`, after a line in its
/// log) the first time it reaches that step, `PURGEFS_TRAP_AT=STEP` makes
/// it trap there as a failed precondition does, and `PURGEFS_PAUSE_AT=STEP`
/// with `PURGEFS_PAUSE_FILE=PATH` holds the first thread that reaches it:
/// the thread makes PATH and waits until it is removed, so a test can do
/// something else in between and let it go on. A release build reads no
/// variable and never stops.
enum DebugSteps {
    #if DEBUG
    private static let killAt = CurrentProcess.environmentValue("PURGEFS_KILL_AT")
    private static let trapAt = CurrentProcess.environmentValue("PURGEFS_TRAP_AT")
    private static let pauseAt = CurrentProcess.environmentValue("PURGEFS_PAUSE_AT")
    private static let pauseFile = CurrentProcess.environmentValue("PURGEFS_PAUSE_FILE")
    private static let paused = Atomic<Bool>(false)
    #endif

    /// The daemon dies, or this thread waits, here if `step` is the one chosen.
    static func reached(_ step: String) {
        #if DEBUG
        if let killAt, killAt == step {
            Diagnostics.note("kill point \(step): killed (PURGEFS_KILL_AT)")
            kill(getpid(), SIGKILL)
        }
        if let trapAt, trapAt == step { preconditionFailure("trap point \(step) (PURGEFS_TRAP_AT)") }
        guard let pauseAt, pauseAt == step, let pauseFile, !paused.exchange(true, ordering: .relaxed) else { return }
        Diagnostics.note("pause point \(step): waiting for \(pauseFile) to go (PURGEFS_PAUSE_AT)")
        let made = open(pauseFile, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        if made >= 0 { close(made) }
        while access(pauseFile, F_OK) == 0 { CurrentProcess.sleep(milliseconds: 10) }
        Diagnostics.note("pause point \(step): going on")
        #endif
    }
}
