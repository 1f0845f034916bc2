import Glibc
import PurgeSys

/// Named steps of changes that must survive `kill -9` anywhere (a linked
/// clone made, broken, renamed): in a debug build, `PURGEFS_KILL_AT=STEP`
/// kills the daemon (`SIGKILL`, after a line in its log) the first time it
/// reaches that step, so a test can check what the next mount makes of
/// every state in between. A release build reads no variable and never stops.
enum KillPoints {
    #if DEBUG
    private static let chosen = CurrentProcess.environmentValue("PURGEFS_KILL_AT")
    #endif

    /// The daemon dies here if `step` is the one chosen.
    static func reached(_ step: String) {
        #if DEBUG
        guard let chosen, chosen == step else { return }
        Diagnostics.note("kill point \(step): killed (PURGEFS_KILL_AT)")
        kill(getpid(), SIGKILL)
        #endif
    }
}
