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
            "Serves the page purgefs usage --html draws, refreshed \(1000 / refreshMilliseconds) times a second, "
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
        \(TextLayout.row("--listen ADDR:PORT", "the IPv4 address and port to listen on (default 127.0.0.1:0, a free port)"))
        \(TextLayout.row("--device NAME", "the shared device NAME instead of one mount"))
        \(TextLayout.row("-h, --help", "show this help"))

        Example:
          purgefs ui ~/app        # then open the URL it prints
        """

    /// How often the page asks for fresh figures; the server reads them at most this often however many pages ask.
    static let refreshMilliseconds = 500

    var mountArgument: String?
    var device: String?
    var host = "127.0.0.1"
    var port: UInt16 = 0
    private(set) var mountpoint = ""

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try ParsedArguments(arguments, command: Self.name, help: Self.help,
                                         valueFlags: ["--listen": "ADDR:PORT", "--device": "NAME"])
        device = parsed.values["--device"]
        if device != nil {
            guard parsed.paths.isEmpty else { throw .usage("ui: give a MOUNT or --device NAME, not both") }
        } else {
            mountArgument = try parsed.onePath("MOUNT", command: Self.name)
        }
        if let listen = parsed.values["--listen"] {
            let parts = listen.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let port = UInt16(parts[1]), Self.isIPv4(parts[0]) else {
                throw .usage("ui: --listen wants ADDR:PORT with an IPv4 address (127.0.0.1:8080), not '\(listen)'")
            }
            host = String(parts[0])
            self.port = port
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

/// What `ui` answers: the page, the fresh figures, and the controls.
final class UIView {
    /// One mount, or `nil` with a device.
    let mountpoint: String?
    let device: String?
    let outputPath: String
    private var cached: (at: UInt64, json: [UInt8])?
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    init(mountpoint: String?, device: String?, outputPath: String) {
        self.mountpoint = mountpoint
        self.device = device
        self.outputPath = outputPath
        started = clock.now
    }

    private var now: UInt64 {
        let elapsed = started.duration(to: clock.now).components
        return UInt64(max(0, elapsed.seconds)) * 1000 + UInt64(max(0, elapsed.attoseconds)) / 1_000_000_000_000_000
    }

    /// The page's figures now: the storage page and what the controls need.
    struct Figures {
        var page: StoragePage
        /// The mount the controls act on.
        var target: String
        var capacity: UInt64
        var available: UInt64
        var external: UInt64
        var containerUsed: UInt64
    }

    func figures() throws(CommandExit) -> Figures {
        let access = AttributeAccess.live
        let page: StoragePage
        let target: String
        if let device {
            let report = try DeviceUsageReport.read(device)
            guard let first = report.containers.first else { throw .failure("no container on device \(device)") }
            page = StoragePage(report, members: UsageCommand.memberReports(report, access))
            target = first.mountpoint
        } else {
            guard let mountpoint else { preconditionFailure("neither a mount nor a device") }
            page = StoragePage(try UsageReport.read(at: try MountLocation.find(mountpoint), access))
            target = mountpoint
        }
        return Figures(page: page, target: target, capacity: try access.number(.capacity, of: target),
                       available: try access.number(.available, of: target), external: try access.number(.external, of: target),
                       containerUsed: try access.number(.containerUsed, of: target))
    }

    func respond(to request: UIServer.Request, token: String) -> UIServer.Response {
        switch (request.method, request.path) {
        case ("GET", "/"):
            return page(token: token)
        case ("GET", "/state"):
            return state()
        case ("POST", "/space"), ("POST", "/purge"), ("POST", "/pin"), ("POST", "/unpin"), ("POST", "/fault"), ("POST", "/crash"):
            return act(request)
        case (_, "/"), (_, "/state"), (_, "/space"), (_, "/purge"), (_, "/pin"), (_, "/unpin"), (_, "/fault"), (_, "/crash"):
            return .text(405, "method not allowed")
        default:
            return .text(404, "not found")
        }
    }

    private func state() -> UIServer.Response {
        if let cached, now - cached.at < UInt64(UICommand.refreshMilliseconds / 2) {
            return UIServer.Response(status: 200, contentType: "application/json", body: cached.json)
        }
        do throws(CommandExit) {
            let figures = try figures()
            let json = JSONValue.object([
                ("html", .string(figures.page.body)),
                ("target", .string(figures.target)),
                ("capacity", .integer(figures.capacity)),
                ("available", .integer(figures.available)),
                ("external", .integer(figures.external)),
                ("container_used", .integer(figures.containerUsed)),
                ("data", figures.page.data),
            ])
            let body = Array(json.compact.utf8)
            cached = (now, body)
            return UIServer.Response(status: 200, contentType: "application/json", body: body)
        } catch {
            return .text(500, error.line)
        }
    }

    /// Runs the control's command; 200 with its output, 400 with why it failed. Nothing is cached past it.
    private func act(_ request: UIServer.Request) -> UIServer.Response {
        cached = nil
        let target: String
        do throws(CommandExit) {
            target = try figures().target
        } catch {
            return .text(500, error.line)
        }
        let arguments: [String]
        switch request.path {
        case "/space":
            guard let value = request.query["available"], let bytes = UInt64(value) else {
                return .text(400, "space: available=BYTES is missing or not a number")
            }
            arguments = ["space", target, "--available", String(bytes)]
        case "/purge":
            if let value = request.query["bytes"] {
                guard let bytes = UInt64(value), bytes > 0 else { return .text(400, "purge: bytes= is not a positive number") }
                arguments = ["purge", target, "--bytes", String(bytes)]
            } else {
                arguments = ["purge", target, "--all"]
            }
        case "/pin", "/unpin":
            guard let path = request.query["path"], let inside = Self.inside(path) else {
                return .text(400, "\(request.path.dropFirst()): path= must be a path inside the container, without ..")
            }
            arguments = [String(request.path.dropFirst()), target + "/" + inside]
        case "/fault":
            // Split as a rules file's line is, so a quoted glob reaches the rule without its quotes.
            guard let args = request.query["args"] else {
                return .text(400, "fault: args= is missing (e.g. --op write --path 'Documents/*' --errno EIO)")
            }
            let words: [String]
            do throws(FaultRuleError) { words = try FaultRuleFile.words(of: Substring(args)) } catch {
                return .text(400, "fault: \(error)")
            }
            guard !words.isEmpty else {
                return .text(400, "fault: args= is empty (e.g. --op write --path 'Documents/*' --errno EIO)")
            }
            arguments = ["fault", "add", target] + words
        default:
            arguments = ["crash", target]
        }
        do throws(Errno) {
            let (status, output) = try OwnMount.purgefs(arguments, outputPath: outputPath)
            guard status.exitCode == 0 else {
                return .text(400, "purgefs \(arguments[0]) failed: \(OwnMount.reason(output, status))")
            }
            return .text(200, output.split(whereSeparator: \.isNewline).first.map(String.init) ?? "done")
        } catch {
            return .text(500, "cannot run purgefs \(arguments[0]): \(error)")
        }
    }

    /// `path` relative to the container, or `nil` when it is empty, absolute or climbs out (`..`).
    static func inside(_ path: String) -> String? {
        let parts = path.split(separator: "/")
        guard !path.hasPrefix("/"), !parts.isEmpty, !parts.contains("..") else { return nil }
        return parts.filter { $0 != "." }.joined(separator: "/")
    }

    // MARK: The page

    private func page(token: String) -> UIServer.Response {
        let initial: String
        var capacity: UInt64 = 0, available: UInt64 = 0
        do throws(CommandExit) {
            let figures = try figures()
            initial = figures.page.body
            capacity = figures.capacity
            available = figures.available
        } catch {
            initial = "<div class=\"card\">\(HTMLPage.escape(error.line))</div>"
        }
        let body = """
            <div id="view">\(initial)</div>
            <div class="card" id="controls"><h2>Controls</h2><div class="controls">
            <label for="available">Available</label>
            <div><input type="range" id="available" min="0" max="\(capacity)" step="1" value="\(available)">
            <span id="available-text">\(HTMLPage.escape(HumanText.size(available)))</span></div>
            <span>Purge</span><div><button id="purge">Purge now</button></div>
            <label for="pin-path">Pin / unpin</label>
            <div><input type="text" id="pin-path" placeholder="Library/Caches/file (relative to the container)">
            <button id="pin">Pin</button> <button id="unpin">Unpin</button></div>
            <label for="fault-args">Fault rule</label>
            <div><input type="text" id="fault-args" placeholder="--op write --path Documents/* --errno EIO --times 1">
            <button id="fault">Add</button></div>
            <span>Crash</span><div><button id="crash">Crash (power loss)</button></div>
            </div><p id="status" class="dim"></p></div>
            """
        let script = """
            var token = \(JSONText.quoted(token));
            var slider = document.getElementById('available'), sliding = false;
            function size(bytes) {
              var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], value = bytes, unit = 0;
              while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
              return (unit ? value.toFixed(1) : value) + ' ' + units[unit];
            }
            function say(text) { document.getElementById('status').textContent = text; }
            function refresh() {
              return fetch('state?token=' + token, {cache: 'no-store'}).then(function (reply) {
                if (!reply.ok) { return reply.text().then(say); }
                return reply.json().then(function (state) {
                  var open = Array.prototype.map.call(document.querySelectorAll('#view details[open]'), function (d) { return d.dataset.app; });
                  document.getElementById('view').innerHTML = state.html;
                  document.querySelectorAll('#view details').forEach(function (d) { d.open = open.indexOf(d.dataset.app) >= 0; });
                  if (!sliding) {
                    slider.max = state.capacity; slider.value = state.available;
                    document.getElementById('available-text').textContent = size(state.available);
                  }
                });
              }).catch(function (error) { say('not answering: ' + error); });
            }
            function act(path, query) {
              var url = path + '?token=' + token + (query ? '&' + query : '');
              return fetch(url, {method: 'POST'}).then(function (reply) {
                return reply.text().then(function (text) { say((reply.ok ? '' : 'refused: ') + text); return refresh(); });
              });
            }
            slider.addEventListener('input', function () { sliding = true; document.getElementById('available-text').textContent = size(+slider.value); });
            slider.addEventListener('change', function () { sliding = false; window.lastAction = act('space', 'available=' + slider.value); });
            document.getElementById('purge').onclick = function () { window.lastAction = act('purge'); };
            ['pin', 'unpin'].forEach(function (name) {
              document.getElementById(name).onclick = function () {
                window.lastAction = act(name, 'path=' + encodeURIComponent(document.getElementById('pin-path').value));
              };
            });
            document.getElementById('fault').onclick = function () {
              window.lastAction = act('fault', 'args=' + encodeURIComponent(document.getElementById('fault-args').value));
            };
            document.getElementById('crash').onclick = function () {
              if (confirm('Crash the mount as after a power loss? What was not synced is lost.')) { window.lastAction = act('crash'); }
            };
            setInterval(refresh, \(UICommand.refreshMilliseconds));
            """
        let page = HTMLPage(title: "purgefs ui: \(device.map { "device \($0)" } ?? mountpoint ?? "")", body: body, script: script)
        return UIServer.Response(status: 200, contentType: "text/html; charset=utf-8", body: Array(page.text.utf8))
    }
}
