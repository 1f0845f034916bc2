import Glibc
import Synchronization

/// Requests to stop (`SIGINT` from Ctrl-C, `SIGTERM`, `SIGHUP`, and `SIGPIPE`
/// when whoever read our output has gone) turned into a
/// flag that a long-running command polls between its steps, so it can undo
/// what it did (unmount, remove its files) before it exits instead of dying
/// where it stands. The handler only stores the signal number, which is
/// async-signal-safe.
public enum TerminationRequests {
    /// The signals caught.
    public static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    /// The first signal received since `install()`, or 0.
    private static let received = Atomic<Int32>(0)

    /// Catches `signals` from now on, with `SA_RESTART` so that calls in
    /// progress carry on. A child started afterwards gets the default
    /// dispositions back at `exec`. Wraps `sigaction(2)`.
    public static func install() throws(Errno) {
        received.store(0, ordering: .relaxed)  // initialized here, never first in the handler
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler = .init(sa_handler: { signal in
                _ = TerminationRequests.received.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
            })
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            _ = try checked { sigaction(signal, &action, nil) }
        }
    }

    /// Gives `signals` their default dispositions back. Wraps `sigaction(2)`.
    public static func restoreDefaults() {
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler = .init(sa_handler: SIG_DFL)
            sigemptyset(&action.sa_mask)
            _ = sigaction(signal, &action, nil)
        }
    }

    /// The first signal received since `install()`, if any.
    public static var pending: Int32? {
        let signal = received.load(ordering: .relaxed)
        return signal == 0 ? nil : signal
    }

    /// `SIGINT`, `SIGTERM`, ...; `signal N` for one without a name here.
    public static func name(of signal: Int32) -> String {
        switch signal {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        case SIGPIPE: return "SIGPIPE"
        default: return "signal \(signal)"
        }
    }
}
