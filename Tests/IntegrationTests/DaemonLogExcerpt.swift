/// What a failed test prints of a daemon's log: its last lines, and before
/// them the last crash's message and crashed thread. (Swift's backtrace of
/// a crash ends with registers and the image list, longer than any tail: CI
/// keeps nothing else, and the tail alone once hid why a daemon died.)
enum DaemonLogExcerpt {
    static func render(_ text: String, lines: Int) -> String? {
        let all = text.split(separator: "\n", omittingEmptySubsequences: false)
        let tail = all.suffix(lines)
        guard tail.contains(where: { !$0.isEmpty }) else { return nil }
        var parts: [String] = []
        if let crash = crashLines(all) {
            parts.append("--- the daemon's last crash ---\n" + crash.joined(separator: "\n"))
        }
        parts.append("--- the daemon's log (last \(tail.count) lines) ---\n" + tail.joined(separator: "\n") + "\n--- end of the daemon's log ---")
        return parts.joined(separator: "\n")
    }

    /// The last crash's runtime message ("Fatal error: ..." comes just
    /// before "*** Program crashed"), then its crashed thread's frames (the
    /// backtrace lists every thread; the crashed one need not be first).
    private static func crashLines(_ all: [Substring]) -> [Substring]? {
        guard let crashed = all.lastIndex(where: { $0.contains("*** Program crashed") }) else { return nil }
        let message = all[..<crashed].lastIndex(where: { $0.contains("Fatal error") }).map { [all[$0]] } ?? []
        var lines = message + [all[crashed]]
        if let thread = all[crashed...].firstIndex(where: { $0.hasSuffix(" crashed:") }) {
            // Its frames end where the registers or the next thread begin.
            let frames = all[(thread + 1)..<min(all.endIndex, thread + 30)]
                .prefix { !$0.hasPrefix("Registers:") && !$0.hasPrefix("Thread ") }
            lines += [all[thread]] + frames
        }
        return lines
    }
}
