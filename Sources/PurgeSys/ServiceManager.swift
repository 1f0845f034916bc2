import Glibc

/// What the service manager (systemd) gave this process, without libsystemd:
/// the notification socket of a `Type=notify` service (sd_notify(3)) and the
/// journal stream its stderr may be (systemd.exec(5), `JOURNAL_STREAM`).
public enum ServiceManager {
    /// The environment variable naming the notification socket: a path, or
    /// `@name` for an abstract socket.
    public static let notifySocketVariable = "NOTIFY_SOCKET"
    /// The environment variable holding `DEVICE:INODE` of the journal stream
    /// that systemd connected stdout or stderr to.
    public static let journalStreamVariable = "JOURNAL_STREAM"

    /// Sends `state` (newline-separated `KEY=VALUE` lines, as `READY=1\nSTATUS=...`)
    /// to the notification socket, if this process has one. Returns whether
    /// it was sent; a process not started by a service manager sends nothing.
    @discardableResult
    public static func notify(_ state: String) -> Bool {
        guard let address = CurrentProcess.environmentValue(notifySocketVariable), !address.isEmpty else { return false }
        guard let socket = try? DatagramSocket() else { return false }
        defer { socket.close() }
        do {
            try socket.send(state, to: address)
            return true
        } catch {
            return false
        }
    }

    /// Whether stderr is the journal: `JOURNAL_STREAM` names the device and
    /// inode that descriptor 2 still is (a redirected stderr is not).
    public static var standardErrorIsJournal: Bool {
        guard let value = CurrentProcess.environmentValue(journalStreamVariable),
              let stream = parseJournalStream(value),
              let status = try? FileDescriptor.standardError.status() else { return false }
        return UInt64(status.st_dev) == stream.device && UInt64(status.st_ino) == stream.inode
    }

    /// `DEVICE:INODE` in decimal, as systemd writes it.
    public static func parseJournalStream(_ value: String) -> (device: UInt64, inode: UInt64)? {
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
        return (device, inode)
    }
}
