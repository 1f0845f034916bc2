import PurgeCore
import PurgeSys

/// What `ui` answers: the page, the fresh figures, and the controls.
public final class UIView {
    /// How often the page asks for fresh figures; the server reads them at most this often however many pages ask.
    public static let refreshMilliseconds = 500

    /// One mount, or `nil` with a device.
    let mountpoint: String?
    let device: String?
    let outputPath: String
    private var cached: (at: UInt64, json: [UInt8])?
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    public init(mountpoint: String?, device: String?, outputPath: String) {
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
            page = StoragePage(report, members: UsageReport.memberReports(report, access))
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

    public func respond(to request: UIServer.Request, token: String) -> UIServer.Response {
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
        if let cached, now - cached.at < UInt64(Self.refreshMilliseconds / 2) {
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
            setInterval(refresh, \(Self.refreshMilliseconds));
            """
        let page = HTMLPage(title: "purgefs ui: \(device.map { "device \($0)" } ?? mountpoint ?? "")", body: body, script: script)
        return UIServer.Response(status: 200, contentType: "text/html; charset=utf-8", body: Array(page.text.utf8))
    }
}
