import Glibc
import PurgeSys
import Synchronization

/// Lines for the daemon log (stderr, which is `daemon.log` once detached,
/// and the journal under systemd).
public enum Diagnostics {
    private static let lastNote = Mutex<(text: String, repeats: Int)>(("", 0))

    /// Writes one line; a line repeated back to back is written once, then counted.
    static func note(_ text: String) {
        let line: String? = lastNote.withLock { last in
            if last.text == text {
                last.repeats += 1
                return last.repeats.isMultiple(of: 1000) ? "\(text) (\(last.repeats) times)" : nil
            }
            last = (text, 0)
            return text
        }
        guard let line else { return }
        try? FileDescriptor.standardError.writeAll(prefix(priority: .warning) + line + "\n")
    }

    /// syslog(3) priorities, as the journal reads them from a `<N>` prefix.
    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6
    }

    /// What starts a line on stderr: `purgefs: `, or, when stderr is the
    /// journal (systemd), `<N>` with the line's priority: the journal adds
    /// the time and the name itself. Looked up for each line, since stderr
    /// changes when the daemon detaches.
    public static func prefix(priority: Priority) -> String {
        ServiceManager.standardErrorIsJournal ? "<\(priority.rawValue)>" : "purgefs: "
    }
}
