import Foundation
import Glibc
import PurgeCore
import PurgeSys
import XCTest

/// The pages in a real browser: headless Chromium (Debian's `chromium`)
/// driven by scripts/lib/browser.py over --remote-debugging-pipe, which
/// evaluates JavaScript in the page and takes a screenshot. Each test checks
/// the page's DOM against the JSON the page was made from. Without chromium
/// the tests skip, and fail under `CI=true` (scripts/bootstrap installs it).
///
/// `PURGEFS_SCREENSHOTS=DIR` keeps each page's screenshot there. (The
/// pictures in docs/pictures/ are the same pages, taken by browser.py, of a
/// richer device than these tests make: three apps on a device "phone".)
final class PageBrowserTests: MountedTestCase {
    override var mountOptions: [String] { ["capacity=64M", "external=10M"] }

    // MARK: The browser

    private struct Browser {
        static var script: String { MountFixture.packageRoot() + "/scripts/lib/browser.py" }

        static func require() throws {
            for program in ["chromium", "python3"] where Subprocess.which(program) == nil {
                let reason = "\(program) is not installed (scripts/bootstrap installs it): the pages are not opened in a browser"
                if ProcessInfo.processInfo.environment["CI"] == "true" { throw SubprocessError("under CI: " + reason) }
                throw XCTSkip(reason)
            }
        }

        /// The values of `expressions`, evaluated in order once `url` has loaded; a screenshot to `screenshot`.
        static func evaluate(_ url: String, _ expressions: [String], screenshot: String, size: String = "1000x900",
                             dark: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> [Any] {
            var arguments = ["python3", script, url, "--screenshot", screenshot, "--size", size, "--timeout", "90"]
            if dark { arguments.append("--dark") }
            for expression in expressions { arguments += ["--eval", expression] }
            let result = try Subprocess.run(arguments, timeout: 120)
            guard result.status == 0, !result.timedOut else { throw SubprocessError("the browser failed: \(result)") }
            let shot = try Data(contentsOf: URL(fileURLWithPath: screenshot))
            XCTAssertEqual(Array(shot.prefix(8)), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "a PNG", file: file, line: line)
            if let keep = ProcessInfo.processInfo.environment["PURGEFS_SCREENSHOTS"] {
                try? shot.write(to: URL(fileURLWithPath: keep + "/" + (screenshot as NSString).lastPathComponent))
            }
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [Any], file: file, line: line)
        }
    }

    private var purgefs: String { fixture.binary }

    private func json(_ path: String) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    private func attribute(_ name: String, of path: String) -> String? {
        (try? Paths.extendedAttribute("user.purgefs." + name, of: path)).map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: run --html

    func testTheRunPageHasTheSamplesAndMarksOfAKnownScenario() throws {
        try Browser.require()
        let container = fixture.base + "/app"
        try FileManager.default.createDirectory(atPath: container + "/Library/Caches", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: container + "/Documents", withIntermediateDirectories: true)
        try Data(repeating: 1, count: 3 << 20).write(to: URL(fileURLWithPath: container + "/Library/Caches/old.bin"))
        let scenario = fixture.base + "/scenario.txt"
        try """
            at 0s squeeze 6M
            when file Documents/go exists timeout 60s fault --op write --path 'Documents/f*' --errno EIO --times 1
            when file Documents/crash-now exists timeout 60s crash
            """.write(toFile: scenario, atomically: true, encoding: .utf8)
        // Each stage waits (against a deadline) for the step before it: the squeeze (a purge of the old cache
        // follows), the fault rule (one write fails), then a write too big (ENOSPC), then the crash, which
        // undoes the file written without a sync.
        let script = """
            m="$PURGEFS_MOUNT"
            wait_for() { i=0; until eval "$1"; do i=$((i+1)); [ $i -gt 6000 ] && exit 9; sleep 0.01; done; }
            wait_for '[ "$(getfattr --only-values -n user.purgefs.external "$m")" != 0 ]'
            touch "$m/Documents/go"
            wait_for '[ -n "$(getfattr --only-values -n user.purgefs.faults "$m")" ]'
            echo hi > "$m/Documents/f1" || true
            head -c 20000000 /dev/zero > "$m/Documents/big" || true
            echo unsynced > "$m/Documents/unsynced"
            touch "$m/Documents/crash-now"
            wait_for '[ -n "$(getfattr --only-values -n user.purgefs.last_crash "$m")" ]'
            """
        let report = fixture.base + "/run.json", page = fixture.base + "/run.html"
        let result = try Subprocess.run([purgefs, "run", "-o", "capacity=64M,low=8M,high=12M", "--scenario", scenario,
                                         "--report", report, "--html", page, container, "--", "sh", "-c", script], timeout: 120)
        // The scenario's crash step kills the command's process group, as a power loss would.
        XCTAssertEqual(result.status, 128 + SIGKILL, "\(result)")
        let run = try json(report)
        let samples = try XCTUnwrap(run["samples"] as? [[String: Any]])
        let steps = try XCTUnwrap(run["steps"] as? [[String: Any]])
        let purges = try XCTUnwrap(run["purges"] as? [[String: Any]])
        let faults = try XCTUnwrap(run["faults"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["state"] as? String }, ["done", "done", "done"], "\(result)")
        XCTAssertEqual(steps.map { $0["action"] as? String }, ["squeeze", "fault", "crash"])
        XCTAssertFalse(purges.isEmpty, "the squeeze made the monitor purge the old cache")
        XCTAssertEqual(purges.first?["path"] as? String, "Library/Caches/old.bin")
        XCTAssertEqual(faults.count, 1)
        XCTAssertEqual(run["low"] as? Int, 8 << 20)
        XCTAssertEqual(run["high"] as? Int, 12 << 20)
        XCTAssertNotNil(run["usage_start"] as? [String: Any])
        XCTAssertNotNil(run["usage_end"] as? [String: Any])
        // The sampling: at least 100 ms apart, each kept one different from the one before (but the last).
        let times = samples.compactMap { $0["at_ms"] as? Int }
        XCTAssertGreaterThanOrEqual(times.count, 3)
        XCTAssertEqual(times, times.sorted())
        for index in 1..<max(1, times.count - 1) {
            XCTAssertGreaterThanOrEqual(times[index] - times[index - 1], 100, "sample \(index)")
            let figures = ["device_used", "container_used", "purgeable", "available", "enospc"]
            XCTAssertFalse(figures.allSatisfy { samples[index][$0] as? Int == samples[index - 1][$0] as? Int },
                           "sample \(index) changed something")
        }
        let enospcRise = zip(samples, samples.dropFirst()).first { ($1["enospc"] as? Int ?? 0) > ($0["enospc"] as? Int ?? 0) }?.1
        let enospcAt = try XCTUnwrap(enospcRise?["at_ms"] as? Int, "the sampled ENOSPC count rose")

        // The page, as the browser builds it.
        let values = try Browser.evaluate("file://" + page, [
            "document.querySelectorAll('#timeline rect.sample').length",
            "[...document.querySelectorAll('#timeline polyline.series')].map(p => [p.dataset.series, +p.dataset.samples])",
            "[...document.querySelectorAll('#timeline .mark')].map(m => [m.dataset.kind, +m.dataset.atMs, m.querySelector('title').textContent])",
            "[...document.querySelectorAll('#timeline .threshold-line')].map(t => [t.dataset.threshold, +t.dataset.bytes])",
            "[!!document.getElementById('storage-start'), !!document.getElementById('storage-end'), document.getElementById('summary').textContent]",
        ], screenshot: fixture.base + "/run.png", size: "1000x1300")
        XCTAssertEqual(values[0] as? Int, samples.count, "a hover column per sample")
        let series = try XCTUnwrap(values[1] as? [[Any]])
        XCTAssertEqual(series.map { $0[0] as? String }, ["device_used", "container_used", "purgeable", "available"])
        XCTAssertEqual(series.map { $0[1] as? Int }, Array(repeating: samples.count, count: 4))
        let marks = try XCTUnwrap(values[2] as? [[Any]]).map { (kind: $0[0] as? String ?? "", at: $0[1] as? Int ?? -1, text: $0[2] as? String ?? "") }
        func at(_ kind: String) -> [Int] { marks.filter { $0.kind == kind }.map(\.at) }
        XCTAssertEqual(at("step"), steps.prefix(2).compactMap { $0["at_ms"] as? Int }, "\(marks)")
        XCTAssertEqual(at("crash"), [steps[2]["at_ms"] as? Int ?? -1])
        XCTAssertEqual(at("fault"), [faults[0]["at_ms"] as? Int ?? -1])
        XCTAssertEqual(at("purge").first, purges[0]["at_ms"] as? Int)
        XCTAssertTrue(at("enospc").contains(enospcAt), "\(marks)")
        XCTAssertTrue(marks.allSatisfy { !$0.text.isEmpty }, "every mark has its hover text")
        XCTAssertTrue(marks.first { $0.kind == "purge" }?.text.contains("Library/Caches/old.bin") == true, "\(marks)")
        XCTAssertTrue(marks.first { $0.kind == "fault" }?.text.contains("EIO") == true, "\(marks)")
        let thresholds = try XCTUnwrap(values[3] as? [[Any]])
        XCTAssertEqual(thresholds.map { "\($0[0]) \($0[1])" }, ["low \(8 << 20)", "high \(12 << 20)"])
        let parts = try XCTUnwrap(values[4] as? [Any])
        XCTAssertEqual(parts[0] as? Bool, true)
        XCTAssertEqual(parts[1] as? Bool, true)
        XCTAssertTrue((parts[2] as? String)?.contains("Answered ENOSPC") == true)

        // The report draws the same page again.
        let again = fixture.base + "/again.html"
        let redraw = try Subprocess.run([purgefs, "report", report, "--html", again])
        XCTAssertEqual(redraw.status, 0, "\(redraw)")
        XCTAssertEqual(try String(contentsOfFile: again, encoding: .utf8), try String(contentsOfFile: page, encoding: .utf8))
    }

    // MARK: usage --html

    func testTheStorageBarsMatchUsageJSONWithinAPixel() throws {
        try Browser.require()
        let mount = fixture.mountpoint
        for (path, bytes) in [("Documents/a.bin", 2 << 20), ("Library/Caches/c.bin", 3 << 20), ("tmp/t.bin", 1 << 20)] {
            try FileManager.default.createDirectory(atPath: mount + "/" + (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(repeating: 7, count: bytes).write(to: URL(fileURLWithPath: mount + "/" + path))
        }
        let usage = try Subprocess.run([purgefs, "usage", mount, "--json"])
        XCTAssertEqual(usage.status, 0, "\(usage)")
        let figures = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(usage.stdout.utf8)) as? [String: Any])
        let device = try XCTUnwrap(figures["device"] as? [String: Any])
        func number(_ object: [String: Any], _ key: String) -> Double { Double(object[key] as? Int ?? -1) }
        let capacity = number(device, "capacity")
        let expected: [(String, Double)] = [
            ("app", number(figures, "allocated") - number(figures, "purgeable") - number(figures, "cloud_evictable")),
            ("caches", number(figures, "purgeable")),
            ("cloud", number(figures, "cloud_evictable")),
            ("other", number(device, "device_used") - number(figures, "allocated")),
            ("free", number(device, "available")),
        ]
        XCTAssertGreaterThanOrEqual(expected[1].1, Double(4 << 20), "the caches and tmp count as purgeable")
        let page = fixture.base + "/usage.html"
        let written = try Subprocess.run([purgefs, "usage", mount, "--html", page])
        XCTAssertEqual(written.status, 0, "\(written)")
        let measure = [
            "[document.querySelector('#device .device-bar').getBoundingClientRect().width, "
                + "[...document.querySelectorAll('#device .device-bar rect.segment')].map(r => [r.dataset.category, +r.dataset.bytes, "
                + "r.getBoundingClientRect().width])]",
            "[...document.querySelectorAll('#apps .app')].map(a => [a.dataset.app, a.querySelector('.icon text').textContent])",
            "getComputedStyle(document.body).backgroundColor",
        ]
        let light = try Browser.evaluate("file://" + page, measure, screenshot: fixture.base + "/usage.png", size: "1000x760")
        let bar = try XCTUnwrap(light[0] as? [Any])
        let barWidth = try XCTUnwrap(bar[0] as? Double)
        let segments = try XCTUnwrap(bar[1] as? [[Any]])
        XCTAssertEqual(segments.map { $0[0] as? String }, expected.map(\.0))
        for (segment, (category, bytes)) in zip(segments, expected) {
            XCTAssertEqual(segment[1] as? Double, bytes, "\(category): the bytes usage --json gives")
            let width = try XCTUnwrap(segment[2] as? Double)
            XCTAssertEqual(width, bytes / capacity * barWidth, accuracy: 1, "\(category): its share of the bar, within a pixel")
        }
        let apps = try XCTUnwrap(light[1] as? [[String]])
        XCTAssertEqual(apps, [["mnt", "MN"]], "the mount as the one app, its initials as its icon")
        let dark = try Browser.evaluate("file://" + page, [measure[2]], screenshot: fixture.base + "/usage-dark.png",
                                        size: "1000x760", dark: true)
        XCTAssertEqual(light[2] as? String, "rgb(242, 242, 247)")
        XCTAssertEqual(dark[0] as? String, "rgb(0, 0, 0)", "dark when the browser prefers it")
    }

    // MARK: ui

    func testTheUISliderSetsAvailableSpaceAndABadTokenChangesNothing() throws {
        try Browser.require()
        let mount = fixture.mountpoint
        let out = fixture.base + "/ui.out", err = fixture.base + "/ui.err"
        let ui = try Subprocess.spawn([purgefs, "ui", mount], stdoutPath: out, stderrPath: err)
        defer { if ui.isRunning { kill(ui.processIdentifier, SIGKILL); Subprocess.wait(ui, timeout: 10) } }
        var url: String?
        let deadline = Date().addingTimeInterval(30)
        while url == nil, ui.isRunning, Date() < deadline {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            url = text.split(whereSeparator: \.isWhitespace).first { $0.hasPrefix("http://127.0.0.1:") }.map(String.init)
            if url == nil { usleep(20_000) }
        }
        let address = try XCTUnwrap(url, "the URL with its token: \((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
        XCTAssertTrue(address.contains("/?token="))
        let before = try XCTUnwrap(attribute("available", of: mount))
        let externalBefore = attribute("external", of: mount)
        let target = 20 << 20
        let values = try Browser.evaluate(address, [
            // Requests with a wrong token or none, from the page itself: 403, and the figures stay.
            """
            Promise.all([fetch('space?available=1048576&token=' + token.replace(/.$/, c => c === '0' ? '1' : '0'), {method: 'POST'}),
                         fetch('space?available=1048576', {method: 'POST'}), fetch('purge?token=', {method: 'POST'}),
                         fetch('state?token=nope')].map(p => p.then(r => r.status)))
              .then(statuses => fetch('state?token=' + token).then(r => r.json()).then(s => [statuses, s.available, s.external]))
            """,
            "[+document.getElementById('available').max, document.querySelectorAll('#view .device-bar rect.segment').length]",
            "new Promise(done => { var s = document.getElementById('available'); s.value = \(target); "
                + "s.dispatchEvent(new Event('change')); window.lastAction.then(() => done(document.getElementById('status').textContent)); })",
            // The fault control, with a quoted glob as a shell or a rules file would have it.
            "fetch('fault?token=' + token + '&args=' + encodeURIComponent(\"--op write --path 'Documents/*' --errno EIO\"),"
                + " {method: 'POST'}).then(r => r.text().then(t => [r.status, t]))",
        ], screenshot: fixture.base + "/ui.png", size: "1000x1000")
        let refused = try XCTUnwrap(values[0] as? [Any])
        XCTAssertEqual(refused[0] as? [Int], [403, 403, 403, 403])
        XCTAssertEqual((refused[1] as? Int).map(String.init), before, "nothing changed by the refused requests")
        XCTAssertEqual((refused[2] as? Int).map(String.init), externalBefore)
        let controls = try XCTUnwrap(values[1] as? [Int])
        XCTAssertEqual(controls, [64 << 20, 5], "the slider goes to the capacity; the live page has the storage bar")
        XCTAssertTrue((values[2] as? String)?.hasPrefix("Set external") == true, "\(values[2])")
        XCTAssertEqual(attribute("available", of: mount), String(target), "the slider ran purgefs space --available")
        XCTAssertEqual((values[3] as? [Any])?.first as? Int, 200, "the fault control: \(values[3])")
        let rules = try Subprocess.run([purgefs, "fault", "list", mount, "--json"], timeout: 30)
        XCTAssertTrue(rules.stdout.contains("\"Documents/*\""), "the rule's glob without its quotes: \(rules.stdout)")
        XCTAssertTrue(mkdir(mount + "/Documents", 0o755) == 0 || errno == EEXIST)
        let fd = open(mount + "/Documents/faulted", O_WRONLY | O_CREAT, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        if fd >= 0 {
            XCTAssertEqual(write(fd, "x", 1), -1, "the rule fires on a write in Documents/")
            XCTAssertEqual(errno, EIO)
            close(fd)
        }

        kill(ui.processIdentifier, SIGINT)
        XCTAssertTrue(Subprocess.wait(ui, timeout: 30), "Ctrl-C stops it")
        XCTAssertEqual(ui.terminationStatus, 0)
        XCTAssertEqual(MountTable.mounts(at: mount).last?.fileSystemType, MountFixture.fstype, "the mount stays")
    }

    // MARK: explore reports

    func testAnExploreReportIsDrawnAsAStripWhoseFailedStateOpensItsDetails() throws {
        try Browser.require()
        let report = fixture.base + "/explore.json", page = fixture.base + "/explore.html"
        var results: [String] = []
        for point in 0...12 {
            results.append("{\"point\": \(point), \"variant\": \"\", \"passed\": \(point != 7)}")
            if point % 4 == 0 { results.append("{\"point\": \(point), \"variant\": \"torn\", \"passed\": true}") }
        }
        try """
            {"states": \(results.count), "passed": \(results.count - 1), "failed": 1, "sampled": false, "operations": 12,
             "results": [\(results.joined(separator: ", "))],
             "failures": [{"point": 7, "variant": "", "operation": "rename Documents/db.tmp Documents/db",
                           "lastDurable": "fsync Documents/db.tmp", "lost": ["Documents/db"],
                           "stderr": "checker: Documents/db is missing", "group": null}]}
            """.write(toFile: report, atomically: true, encoding: .utf8)
        let drawn = try Subprocess.run([purgefs, "report", report, "--html", page])
        XCTAssertEqual(drawn.status, 0, "\(drawn)")
        let values = try Browser.evaluate("file://" + page, [
            "[document.querySelectorAll('#strip rect.state').length, document.querySelectorAll('#strip rect.state.failed').length, "
                + "document.querySelector('#strip rect.state.failed').dataset.point]",
            "document.getElementById('failure-7-').open",
            "document.querySelector('#strip rect.state.failed').dispatchEvent(new MouseEvent('click', {bubbles: true})); "
                + "[document.getElementById('failure-7-').open, document.getElementById('failure-7-').textContent]",
        ], screenshot: fixture.base + "/explore.png", size: "1000x700")
        XCTAssertEqual(values[0] as? [AnyHashable], [results.count, 1, "7"] as [AnyHashable])
        XCTAssertEqual(values[1] as? Bool, false, "closed until its state is clicked")
        let opened = try XCTUnwrap(values[2] as? [Any])
        XCTAssertEqual(opened[0] as? Bool, true)
        XCTAssertTrue((opened[1] as? String)?.contains("checker: Documents/db is missing") == true)

        try "{\"neither\": true}".write(toFile: report, atomically: true, encoding: .utf8)
        let refused = try Subprocess.run([purgefs, "report", report, "--html", page])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("neither a purgefs run report"), "\(refused)")
    }
}
