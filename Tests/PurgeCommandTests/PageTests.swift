import PurgeCore
@testable import PurgeEngines
import PurgeSys
import XCTest
@testable import PurgeCommand

/// The pages without a browser: what they draw from a report, escaping,
/// and the ui server's token check (PageBrowserTests opens them in Chromium).
final class PageTests: XCTestCase {
    func testTextAndScriptsAreEscaped() {
        XCTAssertEqual(HTMLPage.escape("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;")
        let page = HTMLPage(title: "t", body: "", data: .object([("path", .string("</script><script>alert(1)"))])).text
        XCTAssertFalse(page.contains("</script><script>alert"), "a string in the data cannot end its script element")
        XCTAssertTrue(page.contains("\\u003c/script>\\u003cscript>alert(1)"))
        let comment = HTMLPage(title: "t", body: "", data: .object([("path", .string("<!--<script>"))])).text
        XCTAssertFalse(comment.contains("<!--<script>"), "nor start a comment or a script inside it")
        XCTAssertEqual(HTMLPage.coordinate(12.345), "12.35")
        XCTAssertEqual(HTMLPage.coordinate(3), "3")
        XCTAssertEqual(HTMLPage.coordinate(0.05), "0.05")
        XCTAssertEqual(HTMLPage.coordinate(-1.5), "-1.5")
    }

    private func usage(capacity: UInt64 = 1000, allocated: UInt64 = 300, purgeable: UInt64 = 100, evictable: UInt64 = 50,
                       deviceUsed: UInt64 = 500, available: UInt64 = 500, savings: UInt64 = 20) -> UsageReport {
        UsageReport(path: "/srv/my-app", mountpoint: "/srv/my-app", app: 10, documents: 120,
                    zones: [.init(path: "Library/Caches", size: 90, purgeable: 80), .init(path: "tmp", size: 30, purgeable: 20)],
                    directory: DirectoryFigures(size: 290, files: 4, allocated: allocated, purgeable: purgeable, cloneSavings: savings),
                    device: DeviceFigures(capacity: capacity, external: 200, containerUsed: allocated, deviceUsed: deviceUsed,
                                          available: available, availableImportant: 600, availableOpportunistic: 400,
                                          purgeable: purgeable, purgedBytes: 0, purgedFiles: 0),
                    cloudEvictable: evictable)
    }

    func testTheStorageBarIsTheUsageFigures() throws {
        let page = StoragePage(usage())
        XCTAssertEqual(page.segments.map(\.id), ["app", "caches", "cloud", "other", "free"])
        // Apps' data is what is on disk less what purging or evicting could drop; other is the device's rest.
        XCTAssertEqual(page.segments.map(\.bytes), [150, 100, 50, 200, 500])
        XCTAssertEqual(page.apps.map(\.name), ["my-app"])
        XCTAssertEqual(page.apps[0].parts.map(\.id), ["bundle", "documents", "data", "caches", "tmp"])
        XCTAssertEqual(page.apps[0].parts.map(\.purgeable), [0, 0, 0, 80, 20])
        let bar = page.bar
        // 720 units for 1000 bytes: 150 bytes are 108, from 0; the free part starts at 500 bytes, 360.
        XCTAssertTrue(bar.contains("data-category=\"app\" data-bytes=\"150\" x=\"0\" y=\"0\" width=\"108\""), bar)
        XCTAssertTrue(bar.contains("data-category=\"free\" data-bytes=\"500\" x=\"360\" y=\"0\" width=\"360\""), bar)
        XCTAssertTrue(bar.contains("data-category=\"clones\" data-bytes=\"20\""), "clone savings striped over the free part")
        XCTAssertEqual(UsageReport(json: usage().json), usage(), "a report's usage is read back as it was written")
        XCTAssertEqual(StoragePage.initials("my-app"), "MA")
        XCTAssertEqual(StoragePage.initials("photos"), "PH")
    }

    /// A shared device: each container is an app with its own breakdown when
    /// its mount could be read, its figures alone when not; the bar sums them.
    func testTheDevicePageHasEachContainerAsAnApp() throws {
        func container(_ name: String, used: UInt64, purgeable: UInt64) -> DeviceUsageReport.Container {
            .init(container: "/srv/" + name, mountpoint: "/mnt/" + name, processID: 1, used: used, size: used,
                  purgeable: purgeable, quota: 0, quotaGiven: false, lastUse: 0)
        }
        let device = DeviceUsageReport(name: "phone", policy: .quota, simulated: true, capacity: 1000, external: 200,
                                       used: 700, available: 300, purgeable: 110,
                                       containers: [container("my-app", used: 300, purgeable: 100),
                                                    container("photos", used: 200, purgeable: 10)])
        let page = StoragePage(device, members: ["/mnt/my-app": usage()])
        XCTAssertEqual(page.title, "Storage of device phone")
        XCTAssertEqual(page.subtitle, "2 containers, policy quota, simulated")
        XCTAssertEqual(page.apps.map(\.name), ["my-app", "photos"])
        XCTAssertEqual(page.apps.map(\.size), [300, 200], "each app's size is the device's figure for it")
        XCTAssertEqual(page.apps[0].parts.map(\.id), ["bundle", "documents", "data", "caches", "tmp"])
        XCTAssertEqual(page.apps[1].parts, [], "a mount that could not be read has no breakdown")
        XCTAssertTrue(page.apps[1].detail.hasSuffix("(not readable)"))
        // Apps' data: 300 - 100 - 50 (my-app's evictable) + 200 - 10; other is the device's external use.
        XCTAssertEqual(page.segments.map(\.bytes), [340, 110, 50, 200, 300])
        XCTAssertEqual(page.cloneSavings, 20)
    }

    /// A run report by hand: two steps (one a crash), purges close together
    /// and apart, a fault, and samples where the ENOSPC count rises once.
    private let runReport = JSONValue(parsing: """
        {"command":["sh","-c","x"],"exit_code":0,"exit_status":0,"duration_ms":2000,"capacity":1000,"low":100,"high":200,
         "steps":[{"line":1,"step":"at 0s squeeze 300","action":"squeeze","state":"done","at_ms":5,"detail":"Set external"},
                  {"line":2,"step":"at 1s crash","action":"crash","state":"done","at_ms":1000,"detail":"Crashed"},
                  {"line":3,"step":"at 9s purge all","action":"purge","state":"not_reached","at_ms":null,"detail":null}],
         "samples":[{"at_ms":0,"device_used":100,"container_used":50,"purgeable":20,"available":900,"enospc":3},
                    {"at_ms":100,"device_used":800,"container_used":50,"purgeable":20,"available":200,"enospc":3},
                    {"at_ms":700,"device_used":820,"container_used":70,"purgeable":0,"available":180,"enospc":5}],
         "purges":[{"at_ms":110,"path":"caches/a","bytes":10,"reason":"monitor"},{"at_ms":200,"path":"caches/b","bytes":10,"reason":"monitor"},
                   {"at_ms":900,"path":"caches/c","bytes":5,"reason":"write"}],
         "faults":[{"at_ms":600,"rule":1,"op":"write","path":"Documents/f","result":"EIO"}]}
        """)!

    func testTheTimelineHasAMarkForEachEvent() throws {
        let page = TimelinePage(runReport)
        XCTAssertTrue(TimelinePage.recognises(runReport))
        XCTAssertEqual(page.marks.map { "\($0.kind)@\($0.atMilliseconds)" },
                       ["enospc@0", "step@5", "purge@110", "fault@600", "enospc@700", "purge@900", "crash@1000"],
                       "two monitor purges 90 ms apart are one mark; a step not reached has none; ENOSPC where the count rose, "
                           + "from 0 at the mount")
        XCTAssertEqual(page.marks[0].text, "answered ENOSPC: 3 requests (3 since the mount)")
        XCTAssertEqual(page.marks[2].text, "purge (monitor): 2 files, 20 B: caches/a, caches/b")
        XCTAssertEqual(page.marks[4].text, "answered ENOSPC: 2 requests (5 since the mount)")
        let chart = page.chart
        XCTAssertEqual(chart.components(separatedBy: "class=\"sample\"").count - 1, 3, "a hover column per sample")
        XCTAssertEqual(chart.components(separatedBy: "<polyline").count - 1, 4)
        XCTAssertTrue(chart.contains("data-threshold=\"low\" data-bytes=\"100\""))
        XCTAssertTrue(chart.contains("data-threshold=\"high\" data-bytes=\"200\""))
    }

    func testEveryTimelineFieldIsDocumented() {
        let documented = RunTimeline.fieldHelp.flatMap { $0.0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
        XCTAssertEqual(RunTimeline().jsonFields.map(\.0), documented)
    }

    private let exploreReport = JSONValue(parsing: """
        {"states":4,"passed":3,"failed":1,"sampled":false,"operations":2,
         "results":[{"point":0,"variant":"","passed":true},{"point":1,"variant":"","passed":true},
                    {"point":2,"variant":"","passed":false},{"point":2,"variant":"torn","passed":true}],
         "failures":[{"point":2,"variant":"","operation":"rename tmp/db Documents/db","lastDurable":"write Documents/db.tmp",
                      "lost":["Documents/db"],"lostCount":12,"stderr":"db missing <b>","group":null,"kind":"lost-acknowledgment"}]}
        """)!

    /// Found by the parser fuzzing (CommandParserFuzzTests.testReport): a report is a file
    /// the user gives, and its figures at 2^64-1 trapped the pages (operations + 1, the sum
    /// of a group's purged bytes, the time axis's next tick, a sample's place past the run's end).
    func testFiguresUpTo64BitsMakeAPage() throws {
        let most = UInt64.max
        let explore = "{\"states\":1,\"operations\":\(most),\"results\":[{\"point\":\(most),\"variant\":\"\",\"passed\":true}]}"
        XCTAssertTrue(try ReportCommand.page(for: explore, named: "e.json").text.contains("<svg id=\"strip\""))
        let run = "{\"command\":[\"x\"],\"duration_ms\":\(most),\"purges\":[{\"at_ms\":1,\"bytes\":\(most),\"reason\":\"monitor\"},"
            + "{\"at_ms\":2,\"bytes\":\(most),\"reason\":\"monitor\"}],\"samples\":[{\"at_ms\":\(most),\"device_used\":1},{\"at_ms\":1}]}"
        let early = "{\"command\":[\"x\"],\"duration_ms\":1,\"samples\":[{\"at_ms\":\(most),\"device_used\":\(most)},{\"at_ms\":1}]}"
        for text in [run, early] {
            XCTAssertTrue(try ReportCommand.page(for: text, named: "r.json").text.contains("<svg id=\"timeline\""), text)
        }
    }

    func testAnExploreReportIsAStripOfStates() throws {
        XCTAssertTrue(ExplorePage.recognises(exploreReport))
        XCTAssertFalse(TimelinePage.recognises(exploreReport))
        XCTAssertFalse(ExplorePage.recognises(runReport))
        let text = ExplorePage(exploreReport).page.text
        XCTAssertEqual(text.components(separatedBy: "<rect class=\"state ").count - 1, 4)
        XCTAssertTrue(text.contains("data-target=\"failure-2-\""))
        XCTAssertTrue(text.contains("<details class=\"failure\" id=\"failure-2-\">"))
        XCTAssertTrue(text.contains("db missing &lt;b&gt;"), "the checker's output is escaped")
        XCTAssertTrue(text.contains(", 12 lost</summary>"), "lostCount, not the items listed")
        XCTAssertTrue(text.contains("<tr><th>Kind</th><td>lost acknowledgment</td></tr>"), "what kind of failure")
        XCTAssertTrue(text.contains("<li>and 11 more</li>"), "the items not listed are counted")
        XCTAssertThrowsError(try ReportCommand.page(for: "{\"something\":1}", named: "x.json"))
        XCTAssertThrowsError(try ReportCommand.page(for: "not json", named: "x.json"))
    }

    /// Each kind of crash state has its rows, labelled; the run's command,
    /// checker, container and model head the page.
    func testTheStripLabelsItsRowsAndThePageSaysWhatWasExplored() throws {
        let report = try XCTUnwrap(JSONValue(parsing: """
            {"states":6,"passed":4,"failed":2,"operations":1,"command":["python3","writer.py"],"check":"python3 check.py",
             "container":"/tmp/c","model":"xfs",
             "results":[{"point":0,"variant":"names-kept","passed":true},{"point":1,"variant":"names-kept","passed":true},
                        {"point":1,"variant":"names-lost","passed":false},{"point":1,"variant":"torn-1","passed":true},
                        {"point":1,"variant":"torn-2","passed":false},{"point":0,"variant":"torn-1","passed":true}],
             "failures":[]}
            """))
        let text = ExplorePage(report).page.text
        XCTAssertEqual(text.components(separatedBy: "<text class=\"row-label\" x=\"0\" y=\"").count - 1, 3, "one label a band")
        for label in ["names-kept", "names-lost", "torn"] {
            XCTAssertTrue(text.contains("\">\(label)</text>"), label)
        }
        XCTAssertFalse(text.contains(">reordered</text>"), "no band for a kind with no state")
        // Bands: names-kept row 0, names-lost row 1, torn rows 2 and 3 (two torn states at point 1).
        func y(_ point: Int, _ variant: String) -> String? {
            guard let range = text.range(of: "data-point=\"\(point)\" data-variant=\"\(variant)\" ") else { return nil }
            let rest = text[range.upperBound...]
            guard let start = rest.range(of: "y=\"") else { return nil }
            return String(rest[start.upperBound...].prefix { $0 != "\"" })
        }
        XCTAssertEqual(y(1, "names-kept"), "0")
        XCTAssertEqual(y(1, "names-lost"), "18")
        XCTAssertEqual(y(1, "torn-1"), "36")
        XCTAssertEqual(y(1, "torn-2"), "54")
        XCTAssertEqual(y(0, "torn-1"), "36", "a kind keeps its band at every point")
        for shown in ["<th>Command</th><td><code>python3 writer.py</code>", "<th>Checker</th><td><code>python3 check.py</code>",
                      "<th>Container</th><td><code>/tmp/c</code>", "<th>Model</th><td><code>xfs</code>"] {
            XCTAssertTrue(text.contains(shown), shown)
        }
    }

    func testTheUIServerWantsItsToken() {
        var handled: [UIServer.Request] = []
        let listener = ListeningSocketStub.none
        let server = UIServer(listener: listener, token: "abc123") { request in
            handled.append(request)
            return .text(200, "ok")
        }
        defer { listener.close() }
        let host = "Host: 127.0.0.1:\(listener.port)\r\n"
        func respond(_ head: String) -> Int? { server.respond(to: Array(head.utf8), arrivedAt: "127.0.0.1")?.status }
        XCTAssertNil(respond("GET /state?token=abc123 HTTP/1.1\r\n\(host)"), "not whole yet")
        XCTAssertEqual(respond("POST /space?available=5&token=abc124 HTTP/1.1\r\n\(host)\r\n"), 403)
        XCTAssertEqual(respond("POST /space?available=5 HTTP/1.1\r\n\(host)\r\n"), 403)
        XCTAssertEqual(respond("POST /space?available=5&token=abc12 HTTP/1.1\r\n\(host)\r\n"), 403)
        XCTAssertEqual(respond("POST /space?token=abc123&token=abc124 HTTP/1.1\r\n\(host)\r\n"), 400, "a name given twice")
        XCTAssertEqual(respond("GARBAGE\r\n\r\n"), 400)
        XCTAssertEqual(handled, [], "no request without the token reached the handler")
        XCTAssertEqual(respond("POST /pin?path=Library%2FCaches%2Fa+b&token=abc123 HTTP/1.1\r\n\(host)\r\n"), 200)
        XCTAssertEqual(handled, [.init(method: "POST", path: "/pin", query: ["path": "Library/Caches/a b", "token": "abc123"],
                                       host: "127.0.0.1:\(listener.port)")])
        XCTAssertEqual(server.respond(to: [UInt8](repeating: 65, count: UIServer.maxRequestBytes + 1), arrivedAt: "127.0.0.1")?.status, 431)
        XCTAssertEqual(UIView.inside("Library/Caches/a"), "Library/Caches/a")
        XCTAssertNil(UIView.inside("../etc/passwd"))
        XCTAssertNil(UIView.inside("/etc/passwd"))
        XCTAssertNil(UIView.inside("a/../../b"))
    }

    /// DNS rebinding: a page of another site whose name was pointed at this
    /// address sends its own name as Host; with the right token or not, 421 and nothing done.
    func testTheUIServerWantsTheAddressItListensOnAsHost() {
        var handled = 0
        let listener = ListeningSocketStub.none
        let server = UIServer(listener: listener, token: "abc123") { _ in
            handled += 1
            return .text(200, "ok")
        }
        defer { listener.close() }
        let port = listener.port
        func status(_ host: String?, at local: String = "127.0.0.1") -> Int? {
            let head = "POST /purge?token=abc123 HTTP/1.1\r\n" + (host.map { "Host: \($0)\r\n" } ?? "") + "\r\n"
            return server.respond(to: Array(head.utf8), arrivedAt: local)?.status
        }
        for refused in ["evil.example:\(port)", "evil.example", "127.0.0.1", "127.0.0.1:\(port &+ 1)", "localhost.evil.example:\(port)",
                        "10.0.0.5:\(port)", ""] {
            XCTAssertEqual(status(refused), 421, refused)
        }
        XCTAssertEqual(status(nil), 421, "no Host at all")
        XCTAssertEqual(status("localhost:\(port)", at: "10.0.0.5"), 421, "localhost names loopback only")
        XCTAssertEqual(status("127.0.0.1:\(port)", at: "10.0.0.5"), 421, "another address than the one it arrived at")
        XCTAssertEqual(handled, 0, "a misdirected request never reaches the handler")
        XCTAssertEqual(status("127.0.0.1:\(port)"), 200)
        XCTAssertEqual(status("LocalHost:\(port)"), 200)
        XCTAssertEqual(status(" 10.0.0.5:\(port) ", at: "10.0.0.5"), 200)
        XCTAssertEqual(handled, 3)
        XCTAssertTrue(UIServer.names("10.0.0.5", local: "10.0.0.5", port: 80), "port 80 may be left out")
        XCTAssertFalse(UIServer.names("10.0.0.5", local: "10.0.0.5", port: 8080))
    }

    func testTheUIWarnsWhenItListensBeyondLoopback() {
        XCTAssertNil(UICommand.warning(host: "127.0.0.1", port: 8080))
        let warning = UICommand.warning(host: "0.0.0.0", port: 8080)
        XCTAssertTrue(warning?.contains("anyone who can reach it and has the token controls the mount") == true, "\(warning ?? "none")")
        let lines = UICommand.addresses(host: "0.0.0.0", port: 8080, token: "t")
        XCTAssertTrue(lines.contains("listening on 0.0.0.0:8080"), lines)
        XCTAssertTrue(lines.contains("http://127.0.0.1:8080/?token=t"), "loopback is one of the machine's addresses: \(lines)")
        XCTAssertEqual(UICommand.addresses(host: "127.0.0.1", port: 8080, token: "t"), "  http://127.0.0.1:8080/?token=t\n")
    }
}

/// A listener on a free loopback port, for a server whose `respond` is tested without serving.
private enum ListeningSocketStub {
    static var none: ListeningSocket { try! ListeningSocket.listen(host: "127.0.0.1", port: 0) }
}
