import Glibc
import PurgeSys
import Synchronization

/// Lines for the daemon log (stderr, which is `daemon.log` once detached).
enum Diagnostics {
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
        try? FileDescriptor.standardError.writeAll("purgefs: " + line + "\n")
    }
}
