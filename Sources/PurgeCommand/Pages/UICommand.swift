import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs ui [--listen ADDR:PORT] MOUNT|--device NAME`: the Settings >
/// Storage page of `usage --html`, live in a browser, with the controls a
/// tester uses by hand: available space (`space --available`), purge now,
/// pin and unpin, a fault rule, a crash. Each control runs this binary's
/// own command on the mount, as a scenario step does.
struct UICommand: Subcommand {
    static let name = "ui"
    static let abstract = "Serve the storage page live, with controls, to a browser on this machine"
    static let help = """
        Usage: purgefs ui [--listen ADDR:PORT] MOUNT
               purgefs ui [--listen ADDR:PORT] --device NAME

        \(TextLayout.paragraph(
            "Serves the page purgefs usage --html draws, refreshed \(1000 / UIView.refreshMilliseconds) times a second, "
            + "with controls: a slider for the available space (purgefs space --available), purge now (purgefs "
            + "purge --all), pin or unpin a path (relative to the container), add a fault rule (the arguments of "
            + "purgefs fault add after MOUNTPOINT) and crash (purgefs crash). With --device NAME the page is the "
            + "shared device's, and the controls act through its biggest container's mount."))

        \(TextLayout.paragraph(
            "It listens on 127.0.0.1 and a free port unless --listen says otherwise, and prints the URL to open, "
            + "with a token made at start in it (as Jupyter does): every request needs that token, and one "
            + "without it, or with another, gets 403 and changes nothing, since the controls drive the mount with "
            + "this process's rights. A request whose Host is not the address it was sent to (or localhost on "
            + "loopback), with the port, gets 421 and changes nothing: a web page cannot reach it through a DNS "
            + "name of its own. A connection that has not sent its whole request within "
            + "\(UIServer.headMilliseconds / 1000) s is closed, so slow clients cannot hold it. With --listen on "
            + "another address than loopback (0.0.0.0: every address, each printed) it warns on stderr that anyone "
            + "who can reach it and has the token controls the mount. Ctrl-C (SIGINT) or SIGTERM stops it; the "
            + "mount stays."))

        Flags:
        \(flags.rows)

        Example:
          purgefs ui ~/app        # then open the URL it prints
        """

    static let flags = FlagTable<Self>(name, [
        .value("--listen", "ADDR:PORT", \.listen,
               "the IPv4 address and port to listen on (default 127.0.0.1:0, a free port)") { value throws(CommandExit) in
            let parts = value.text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let port = UInt16(parts[1]), isIPv4(parts[0]) else {
                throw .usage("ui: --listen wants ADDR:PORT with an IPv4 address (127.0.0.1:8080), not '\(value.text)'")
            }
            return (String(parts[0]), port)
        },
        .value("--device", "NAME", \.device, "the shared device NAME instead of one mount"),
    ])

    var mountArgument: String?
    var device: String?
    var host = "127.0.0.1"
    var port: UInt16 = 0
    /// `--listen`: the host and port together.
    private var listen: (host: String, port: UInt16) {
        get { (host, port) }
        set { (host, port) = newValue }
    }
    private(set) var mountpoint = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        if device != nil {
            guard parsed.paths.isEmpty else { throw .usage("ui: give a MOUNT or --device NAME, not both") }
        } else {
            mountArgument = try parsed.onePath("MOUNT", command: Self.name)
        }
    }

    static func isIPv4(_ text: Substring) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && UInt8($0) != nil }
    }

    mutating func validate() throws(CommandExit) {
        if let device {
            _ = try DeviceUsageReport.read(device)
            return
        }
        guard let mountArgument else { preconditionFailure("neither a mount nor a device") }
        let location = try MountLocation.mountPoint(mountArgument)
        try location.requireMountPoint()
        mountpoint = location.path
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        let listener: ListeningSocket
        let token: String
        do throws(Errno) {
            listener = try ListeningSocket.listen(host: host, port: port)
            token = try RandomBytes.read(16).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        } catch {
            throw .failure("ui: cannot listen on \(host):\(port): \(error)")
        }
        defer { listener.close() }
        do throws(Errno) {
            try TerminationRequests.install()
        } catch {
            throw .failure("ui: cannot catch SIGINT and SIGTERM: \(error)")
        }
        defer { TerminationRequests.restoreDefaults() }
        let scratch = try OwnMount.scratchDirectory("purgefs-ui")
        defer { try? OwnMount.removeWithPatience(scratch, missingIsFine: true) }

        let view = UIView(mountpoint: device == nil ? mountpoint : nil, device: device, outputPath: scratch + "/.output")
        let server = UIServer(listener: listener, token: token) { view.respond(to: $0, token: token) }
        if let warning = Self.warning(host: host, port: listener.port) {
            try? FileDescriptor.standardError.writeAll(warning + "\n")
        }
        // Written at once (not through stdio's buffer): whoever reads it needs the URL now.
        try? FileDescriptor.standardOutput.writeAll("purgefs ui: serving \(device.map { "device \($0)" } ?? mountpoint)\n"
            + Self.addresses(host: host, port: listener.port, token: token) + "Ctrl-C stops it; the mount stays.\n")
        server.serve(until: { TerminationRequests.pending != nil })
    }

    /// The lines that say where it listens: the URL, or for `0.0.0.0` the
    /// address it listens on and a URL for each of the machine's IPv4 addresses.
    static func addresses(host: String, port: UInt16, token: String) -> String {
        guard host == "0.0.0.0" else { return "  http://\(host):\(port)/?token=\(token)\n" }
        let machine = (try? IPv4Address.ofInterfaces()) ?? []
        return "  listening on 0.0.0.0:\(port), every IPv4 address of this machine:\n"
            + machine.map { "  http://\($0):\(port)/?token=\(token)\n" }.joined()
    }

    /// The line for stderr when other machines can reach the page.
    static func warning(host: String, port: UInt16) -> String? {
        guard !IPv4Address.isLoopback(host) else { return nil }
        let reach = host == "0.0.0.0" ? "every address of this machine" : host
        return "purgefs ui: warning: listening on \(host):\(port) (\(reach)), not on loopback: anyone who can reach it "
            + "and has the token controls the mount, with this process's rights"
    }
}
