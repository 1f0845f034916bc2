import PurgeSys

/// Lets go of whoever started the daemon, once the mount is ready: stdin and
/// stdout to /dev/null, stderr to the daemon log. A caller reading our output
/// until end of file (a script, a test harness) would otherwise wait for as
/// long as the daemon lives.
enum StandardStreams {
    /// `log` is the daemon log the server opened in the state directory
    /// before mounting (an in-place mount hides that path from the daemon);
    /// it stays open and owned by the server. Best effort: a stream that
    /// cannot be redirected is left as it is.
    static func detach(stderrTo log: FileDescriptor?) {
        let null = try? FileDescriptor.open(path: "/dev/null", flags: OpenFlags.readWrite)
        if let null {
            try? null.duplicate(onto: .standardInput)
            try? null.duplicate(onto: .standardOutput)
        }
        if let log {
            try? log.duplicate(onto: .standardError)
        } else if let null {
            try? null.duplicate(onto: .standardError)
        }
        if let null, null.rawValue > FileDescriptor.standardError.rawValue { null.closeQuietly() }
    }
}
