import Foundation
import Glibc
import PurgeCore
import XCTest

/// The network's faults for app tests: `purgefs cloud offline|online|touch`,
/// fault rules on the cloud tier's own calls, against a directory remote
/// and, in the subclasses, `rclone serve s3` and `rclone serve webdav` (the
/// fault layer is the same for every store; `cloud touch`, the transfers
/// a fault holds up and the queue that drains once online are the store's).
class CloudNetworkFaultTests: CloudTestCase {
    override func prepareContainer() throws {
        try super.prepareContainer()
        makeDirectories(fixture.container, ["Documents", "other"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func purgefs(_ arguments: String...) throws -> CommandResult {
        try Subprocess.run([fixture.binary] + arguments, timeout: 30)
    }

    func testAnEvictedDocumentOpenedOfflineFailsAtOnceAndOpensOnceOnline() throws {
        try fixture.mount(options: cloudOptions())
        let (doc, bytes) = evictedDocument("/Documents/far.bin", size: 200_000, seed: 1)
        let offline = try purgefs("cloud", "offline", fixture.mountpoint)
        XCTAssertEqual(offline.status, 0, "\(offline)")
        XCTAssertEqual(getAttr(fixture.mountpoint, pf("cloud")), .value("offline"))
        XCTAssertEqual(open(doc, O_RDONLY), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertTrue(readPurgeLog(fixture.container).contains {
            $0.reason == "download-failed" && $0.path == "Documents/far.bin" && $0.error == "offline"
        }, "the log says download-failed offline: \(readPurgeLog(fixture.container).map { "\($0.reason) \($0.error ?? "")" })")
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("not_downloaded"))
        XCTAssertEqual(try purgefs("cloud", "online", fixture.mountpoint).status, 0)
        XCTAssertTrue(readBytes(doc) == bytes, "online again: opening downloads it")
        XCTAssertEqual(try purgefs("cloud", "sideways", fixture.mountpoint).status, 64)
    }

    func testUploadsQueueWhileOfflineAndAllLandWholeOnceOnline() throws {
        try fixture.mount(options: cloudOptions())
        XCTAssertEqual(try purgefs("cloud", "offline", fixture.mountpoint).status, 0)
        let names = ["a", "b", "c"]
        for (index, name) in names.enumerated() {
            XCTAssertEqual(writeBytes(fixture.mountpoint + "/Documents/" + name, tiled(300_000 + index, seed: UInt64(index))), 0)
        }
        XCTAssertTrue(eventually(timeout: 15) {
            Set(readPurgeLog(fixture.container).filter { $0.reason == "upload-failed" }.map(\.path)).count == 3
        }, "each upload tried and failed offline")
        XCTAssertTrue(readPurgeLog(fixture.container).filter { $0.reason == "upload-failed" }.allSatisfy { $0.error?.hasPrefix("offline") == true })
        for name in names {
            XCTAssertNil(remoteCopy("Documents/" + name), "nothing reaches the remote offline")
            XCTAssertEqual(getAttr(fixture.mountpoint + "/Documents/" + name, pf("uploaded")), .value("0"))
        }
        XCTAssertEqual(try purgefs("cloud", "online", fixture.mountpoint).status, 0)
        for (index, name) in names.enumerated() {
            waitUploaded(fixture.mountpoint + "/Documents/" + name, timeout: 10)
            XCTAssertTrue(remoteCopy("Documents/" + name) == tiled(300_000 + index, seed: UInt64(index)), "\(name) whole")
        }
    }

    /// A rename over an uploaded document that has not reached the remote
    /// (offline) leaves the document not uploaded under its name: the
    /// remote still holds the old copy there, and the rename may yet move
    /// it. Evicting is refused until the rename lands.
    func testARenameNotYetOnTheRemoteIsNotUploaded() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        uploadDraftAndFinal(seeds: (21, 22))
        XCTAssertEqual(try purgefs("cloud", "offline", m).status, 0)
        XCTAssertEqual(rename(m + "/Documents/draft", m + "/Documents/final"), 0)
        XCTAssertEqual(getAttr(m + "/Documents/final", pf("uploaded")), .value("0"))
        XCTAssertEqual(setAttr(m + "/Documents/final", pf("evict"), "1"), EBUSY)
        XCTAssertTrue(remoteCopy("Documents/final") == tiled(30_000, seed: 22), "offline, the remote keeps the old copy")
        XCTAssertEqual(try purgefs("cloud", "online", m).status, 0)
        waitUploaded(m + "/Documents/final")
        XCTAssertTrue(remoteCopy("Documents/final") == tiled(30_000, seed: 21), "online, the rename reached the remote")
        XCTAssertEqual(setAttr(m + "/Documents/final", pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(m + "/Documents/final") == tiled(30_000, seed: 21))
    }

    /// `--op download --delay` longer than the open's deadline
    /// (`PURGEFS_DOWNLOAD_TIMEOUT`, 1 s here): the open fails with EIO after
    /// the deadline, not after the delay; the transfer ends in the background.
    func testASlowDownloadHoldsTheOpenNoLongerThanItsTimeout() throws {
        setenv("PURGEFS_DOWNLOAD_TIMEOUT", "1", 1)
        defer { unsetenv("PURGEFS_DOWNLOAD_TIMEOUT") }
        try fixture.mount(options: cloudOptions())
        let (doc, bytes) = evictedDocument("/Documents/slow", size: 50_000, seed: 3)
        let added = try purgefs("fault", "add", fixture.mountpoint, "--op", "download", "--path", "Documents/*", "--delay", "8s", "--times", "1")
        XCTAssertEqual(added.status, 0, "\(added)")
        let start = Date()
        XCTAssertEqual(open(doc, O_RDONLY), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertLessThan(Date().timeIntervalSince(start), 8, "the open waited for the whole delay")
        XCTAssertTrue(readPurgeLog(fixture.container).contains { $0.reason == "download-failed" && $0.error?.contains("within 1 s") == true })
        // The delayed transfer goes on and lands; the next open finds the data.
        XCTAssertTrue(eventually(timeout: 20) { getAttr(doc, pf("download_status")) == .value("current") })
        XCTAssertTrue(readBytes(doc) == bytes)
        let faults = try purgefs("log", fixture.mountpoint, "--faults")
        XCTAssertTrue(faults.stdout.contains("download"), faults.stdout)
    }

    /// Rules from `faults=FILE` on the cloud's calls: an upload fails with the rule's errno, then lands once the rule is spent.
    func testFaultsFileRulesOnUploads() throws {
        let rules = fixture.base + "/rules"
        try "--op upload --path 'Documents/*' --errno EIO --times 2\n".write(toFile: rules, atomically: true, encoding: .utf8)
        try fixture.mount(options: cloudOptions(["faults=" + rules]))
        let doc = fixture.mountpoint + "/Documents/flaky"
        XCTAssertEqual(writeBytes(doc, tiled(10_000, seed: 4)), 0)
        waitUploaded(doc, timeout: 20)
        let failures = readPurgeLog(fixture.container).filter { $0.reason == "upload-failed" }
        XCTAssertEqual(failures.count, 2, "\(failures)")
        XCTAssertTrue(remoteCopy("Documents/flaky") == tiled(10_000, seed: 4))
    }

    /// Another device's save: `purgefs cloud touch` replaces the remote copy,
    /// so `download_status` goes to `downloaded`; the next download brings it.
    func testCloudTouchIsAnotherDevicesChange() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/shared.txt"
        XCTAssertEqual(writeBytes(doc, tiled(7000, seed: 5)), 0)
        waitUploaded(doc)
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
        let touched = try purgefs("cloud", "touch", fixture.mountpoint, doc)
        XCTAssertEqual(touched.status, 0, "\(touched)")
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("downloaded"))
        XCTAssertEqual(try purgefs("cloud", "touch", fixture.mountpoint, "Documents/never").status, 1, "no remote copy")
        XCTAssertEqual(try purgefs("cloud", "touch", fixture.mountpoint, "other/x").status, 1, "not a document")
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(doc) == tiled(7000, seed: 5))
        XCTAssertEqual(getAttr(doc, pf("download_status")), .value("current"))
    }

    /// A `remote-delete` rule: the delete of an uploaded document stays
    /// journalled (`remote-failed` in the log, retried with backoff, the
    /// remote copy kept) until `purgefs fault clear`; then it lands.
    func testARemoteDeleteFailsUntilItsRuleIsCleared() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/gone"
        XCTAssertEqual(writeBytes(doc, tiled(6000, seed: 6)), 0)
        waitUploaded(doc)
        let added = try purgefs("fault", "add", fixture.mountpoint, "--op", "remote-delete", "--path", "Documents/*", "--errno", "EIO")
        XCTAssertEqual(added.status, 0, "\(added)")
        XCTAssertEqual(unlink(doc), 0)
        XCTAssertTrue(eventually(timeout: 10) {
            readPurgeLog(fixture.container).contains {
                $0.reason == "remote-failed" && $0.path == "Documents/gone" && $0.error?.contains("remote-delete") == true
            }
        }, "the log says remote-failed: \(readPurgeLog(fixture.container).map { "\($0.reason) \($0.path) \($0.error ?? "")" })")
        // Retried with backoff (2 s, then 4 s), not at each of the worker's passes (four a second).
        usleep(1_500_000)
        let failures = readPurgeLog(fixture.container).filter { $0.reason == "remote-failed" }
        XCTAssertLessThanOrEqual(failures.count, 2, "\(failures.map { $0.error ?? "" })")
        XCTAssertNotNil(remoteCopy("Documents/gone"), "the remote copy stays while the rule holds")
        XCTAssertEqual(try purgefs("fault", "clear", fixture.mountpoint).status, 0)
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 10 : 40) { remoteCopy("Documents/gone") == nil },
                      "the delete lands once the rule is cleared")
    }

    /// A document replaced by a rename (write `report.new`, rename it over
    /// `report`) while the remote refuses deletes a while: the delete of the
    /// old copy and the rename are journalled, and the new content's upload
    /// waits for them. Uploaded first, it was taken by the delete once the
    /// remote took deletes again, and the document, uploaded by its record,
    /// could be evicted and never downloaded (found by scripts/soak).
    func testAnUploadWaitsForTheJournalledDeleteOfItsPath() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/report"
        XCTAssertEqual(writeBytes(doc, tiled(6000, seed: 11)), 0)
        waitUploaded(doc)
        let added = try purgefs("fault", "add", fixture.mountpoint, "--op", "remote-delete", "--path", "Documents/report",
                                "--errno", "EIO", "--times", "2")
        XCTAssertEqual(added.status, 0, "\(added)")
        let new = fixture.mountpoint + "/Documents/report.new"
        let content = tiled(9000, seed: 12)
        XCTAssertEqual(writeBytes(new, content), 0)
        XCTAssertEqual(rename(new, doc), 0)
        waitUploaded(doc, timeout: 60)
        let manifest = fixture.container + "/.purgefs/" + CloudManifest.fileName
        XCTAssertTrue(eventually(timeout: 60) {
            readBytes(manifest).flatMap { CloudManifest(decoding: $0) }?.intents.isEmpty == true
        }, "the journalled delete and rename applied: \(String(decoding: readBytes(manifest) ?? [], as: UTF8.self))")
        XCTAssertTrue(remoteCopy("Documents/report") == content, "the remote holds the new content")
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(doc) == content, "evicted, it downloads again")
    }

    /// An upload chosen before the app replaced its document by a rename:
    /// `online` makes `a` and `report` due in one pass of the worker, whose
    /// upload of `a` a delay rule holds up; meanwhile the app replaces
    /// `report` (the delete of its old copy and the rename of `report.new`
    /// journalled), then the worker uploads `report`'s new content. Recorded
    /// then, the journalled delete applied next took that copy: `report`
    /// read as uploaded with no copy in the store, and an eviction lost it.
    /// An upload is recorded only if no intent still to apply touches its
    /// path; else it goes again after them.
    func testAnUploadChosenBeforeARenameOverItsPathIsRecordedOnlyAfterTheJournal() throws {
        try fixture.mount(options: cloudOptions())
        let m = fixture.mountpoint
        XCTAssertEqual(try purgefs("cloud", "offline", m).status, 0)
        XCTAssertEqual(writeBytes(m + "/Documents/a", tiled(1000, seed: 21)), 0)
        let doc = m + "/Documents/report"
        XCTAssertEqual(writeBytes(doc, tiled(6000, seed: 22)), 0)
        let added = try purgefs("fault", "add", m, "--op", "upload", "--path", "Documents/a", "--delay", "10s", "--times", "1")
        XCTAssertEqual(added.status, 0, "\(added)")
        func ruleFired() -> Bool {
            guard let listed = try? purgefs("fault", "list", m, "--json"),
                  let rules = try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]
            else { return false }
            return rules.contains { ($0["fired"] as? Int) == 1 }
        }
        func delayEnded() -> Bool { (try? purgefs("log", m, "--faults", "--json"))?.stdout.contains("delayed") == true }
        XCTAssertEqual(try purgefs("cloud", "online", m).status, 0)
        XCTAssertTrue(eventually(timeout: 15) { ruleFired() }, "the upload of a is held up")
        let content = tiled(9000, seed: 23)
        XCTAssertEqual(writeBytes(doc + ".new", content), 0)
        XCTAssertEqual(rename(doc + ".new", doc), 0)
        XCTAssertFalse(delayEnded(), "report replaced while the upload of a was held up")
        let manifest = fixture.container + "/.purgefs/" + CloudManifest.fileName
        XCTAssertTrue(eventually(timeout: 60) {
            delayEnded() && readBytes(manifest).flatMap { CloudManifest(decoding: $0) }?.intents.isEmpty == true
        }, "the journalled delete and rename applied: \(String(decoding: readBytes(manifest) ?? [], as: UTF8.self))")
        waitUploaded(doc, timeout: 30)
        XCTAssertTrue(eventually(timeout: Self.remoteKind == .directory ? 10 : 40) { remoteCopy("Documents/report") == content },
                      "the remote holds the new content under the document's name")
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
        XCTAssertTrue(readBytes(doc) == content, "evicted, it downloads again")
    }

    /// A `download --offline` rule, once: the open of an evicted document
    /// gets `EIO` at once and the log says `download-failed offline`; the
    /// rule spent, the next open downloads it.
    func testADownloadOfflineRuleFailsOneOpen() throws {
        try fixture.mount(options: cloudOptions())
        let (doc, bytes) = evictedDocument("/Documents/away", size: 30_000, seed: 9)
        let added = try purgefs("fault", "add", fixture.mountpoint, "--op", "download", "--path", "Documents/away", "--offline", "--times", "1")
        XCTAssertEqual(added.status, 0, "\(added)")
        XCTAssertEqual(open(doc, O_RDONLY), -1)
        XCTAssertEqual(errno, EIO)
        XCTAssertTrue(readPurgeLog(fixture.container).contains {
            $0.reason == "download-failed" && $0.path == "Documents/away" && $0.error == "offline"
        }, "\(readPurgeLog(fixture.container).map { "\($0.reason) \($0.error ?? "")" })")
        XCTAssertEqual(getAttr(fixture.mountpoint, pf("cloud")), .value("online"), "a rule, not the offline state")
        XCTAssertTrue(readBytes(doc) == bytes, "the rule spent, the open downloads it")
    }

    /// A scenario's `fault` step on the cloud: `at 0s fault --op download
    /// --errno EIO --times 1` fails the command's first open of an evicted
    /// document, not its second.
    func testAScenarioFaultsADownload() throws {
        let scenario = fixture.base + "/scenario"
        try "at 0s fault --op download --path 'Documents/*' --errno EIO --times 1\n"
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        let script = """
            doc="$PURGEFS_MOUNT/Documents/s"
            printf hello > "$doc"
            until [ "$(getfattr --only-values -n user.purgefs.uploaded "$doc")" = 1 ]; do sleep 0.05; done
            until "$PURGEFS_BINARY" fault list "$PURGEFS_MOUNT" | grep -q download; do sleep 0.05; done
            setfattr -n user.purgefs.evict -v 1 "$doc" || exit 2
            if cat "$doc" 2>/dev/null; then exit 3; fi
            [ "$(cat "$doc")" = hello ] || exit 4
            """
        var environment = ProcessInfo.processInfo.environment
        environment["PURGEFS_BINARY"] = fixture.binary
        let run = try Subprocess.run([fixture.binary, "run", "-o", cloudOptions().joined(separator: ","), "--scenario", scenario,
                                      fixture.container, "--", "timeout", "60", "sh", "-c", script],
                                     timeout: 90, environment: environment)
        XCTAssertEqual(run.status, 0, "\(run)\nlog: \(readPurgeLog(fixture.container).map { "\($0.reason) \($0.path) \($0.error ?? "")" })")
        XCTAssertEqual(readPurgeLog(fixture.container).filter { $0.reason == "download-failed" }.map { $0.path }, ["Documents/s"])
    }

    /// A scenario takes the cloud offline and online again while the command runs.
    func testAScenarioTakesTheCloudOfflineAndOnline() throws {
        let scenario = fixture.base + "/scenario"
        try "at 0s cloud offline\nwhen file Documents/seen-offline exists timeout 20s cloud online\n"
            .write(toFile: scenario, atomically: true, encoding: .utf8)
        let script = """
            until [ "$(getfattr --only-values -n user.purgefs.cloud "$PURGEFS_MOUNT")" = offline ]; do sleep 0.05; done
            touch "$PURGEFS_MOUNT/Documents/seen-offline"
            until [ "$(getfattr --only-values -n user.purgefs.cloud "$PURGEFS_MOUNT")" = online ]; do sleep 0.05; done
            """
        let run = try Subprocess.run([fixture.binary, "run", "-o", cloudOptions().joined(separator: ","), "--scenario", scenario,
                                      fixture.container, "--", "timeout", "30", "sh", "-c", script], timeout: 60)
        XCTAssertEqual(run.status, 0, "\(run)")
    }
}

/// The network's faults against `rclone serve s3` and `rclone serve webdav`
/// (in this file: test discovery on Linux finds a superclass's tests only there).
final class CloudNetworkFaultS3Tests: CloudNetworkFaultTests {
    override class var remoteKind: CloudRemoteKind { .s3 }
    func testRcloneEndsWithAnUnmount() throws { try checkRcloneEndingWithAnUnmount() }
    func testAMissingRcloneIsRefusedAtMount() throws { try checkAMissingRcloneIsRefusedAtMount() }

    /// A secret key the server does not know: S3 refuses the first call
    /// (the bucket's mkdir) with 403; the mount says so in one line.
    func testBadCredentialsAreRefusedAtMount() throws {
        let config = try String(contentsOfFile: try XCTUnwrap(server).configPath, encoding: .utf8)
        let wrong = config.split(separator: "\n").map { line in
            line.hasPrefix("secret_access_key") ? "secret_access_key = not-the-secret" : String(line)
        }.joined(separator: "\n") + "\n"
        XCTAssertNotEqual(wrong, config)
        let path = fixture.base + "/wrong-secret.conf"
        try wrong.write(toFile: path, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["RCLONE_CONFIG"] = path
        try checkRefusedAtMount(environment: environment, saying: "403")  // rclone 1.75: "StatusCode: 403, ... SignatureDoesNotMatch"
    }
}

final class CloudNetworkFaultWebDAVTests: CloudNetworkFaultTests {
    override class var remoteKind: CloudRemoteKind { .webdav }
    func testRcloneEndsWithAnUnmount() throws { try checkRcloneEndingWithAnUnmount() }
}

/// What only rclone's remotes have: rclone itself, started and stopped with the mount.
extension CloudTestCase {
    /// The `rclone rcd` of this mount, by its socket in the state directory.
    func rcloneDaemons() -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            let words = String(decoding: data, as: UTF8.self).split(separator: "\0")
            return words.contains("rcd") && words.contains { $0.contains(fixture.container + "/.purgefs/") }
        }
    }

    /// The remote server goes away while mounted: local work goes on, the
    /// upload fails and is retried; back, it lands. rclone ends with the
    /// daemon, also on `kill -9`.
    func checkRemoteGoingAwayAndRcloneEndingWithTheDaemon() throws {
        try fixture.mount(options: cloudOptions())
        XCTAssertEqual(rcloneDaemons().count, 1, "one rclone rcd for the mount")
        let m = fixture.mountpoint
        XCTAssertEqual(writeBytes(m + "/Documents/before", tiled(5000, seed: 1)), 0)
        waitUploaded(m + "/Documents/before")
        stopServer()
        XCTAssertEqual(writeBytes(m + "/Documents/after", tiled(6000, seed: 2)), 0, "local work goes on")
        XCTAssertTrue(eventually(timeout: 30) { readPurgeLog(fixture.container).contains { $0.reason == "upload-failed" && $0.path == "Documents/after" } })
        XCTAssertTrue(readBytes(m + "/Documents/after") == tiled(6000, seed: 2))
        XCTAssertTrue(readBytes(m + "/Documents/before") == tiled(5000, seed: 1))
        fixture.killDaemon()
        XCTAssertTrue(eventually(timeout: 10) { rcloneDaemons().isEmpty }, "rclone ends with the killed daemon")
    }

    /// A normal unmount stops the mount's `rclone rcd` (the daemon stops it
    /// before it exits; `--pdeathsig` is only for a killed daemon).
    func checkRcloneEndingWithAnUnmount() throws {
        try fixture.mount(options: cloudOptions())
        XCTAssertEqual(rcloneDaemons().count, 1, "one rclone rcd for the mount")
        XCTAssertEqual(writeBytes(fixture.mountpoint + "/Documents/once", tiled(4000, seed: 8)), 0)
        waitUploaded(fixture.mountpoint + "/Documents/once")
        for problem in fixture.unmount() { XCTFail(problem) }
        XCTAssertEqual(rcloneDaemons(), [], "no rclone rcd of the mount left after the unmount")
    }

    /// No rclone on the daemon's `PATH`: one line that says how to get it, nothing mounted.
    func checkAMissingRcloneIsRefusedAtMount() throws {
        let empty = fixture.base + "/no-rclone-bin"
        XCTAssertEqual(mkdir(empty, 0o755), 0)
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = empty
        try checkRefusedAtMount(environment: environment, saying: "rclone is not installed")
    }

    /// `purgefs mount` with `cloud=` for this remote and `environment`
    /// fails: status 1, one line on stderr that says `saying`, nothing
    /// mounted, no rclone left.
    func checkRefusedAtMount(environment: [String: String], saying: String,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try Subprocess.run([fixture.binary, "mount", "-o", cloudOptions().joined(separator: ","),
                                         fixture.container, fixture.mountpoint], timeout: 90, environment: environment)
        XCTAssertEqual(result.status, 1, "\(result)", file: file, line: line)
        XCTAssertTrue(result.stderr.contains(saying), result.stderr, file: file, line: line)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "one line: \(result.stderr)", file: file, line: line)
        XCTAssertFalse(MountTable.isMounted(fixture.mountpoint), file: file, line: line)
        XCTAssertEqual(rcloneDaemons(), [], "no rclone left behind", file: file, line: line)
    }

    /// An unknown remote: one line, nothing mounted.
    func checkAnUnknownRemoteIsRefusedAtMount() throws {
        let result = try Subprocess.run([fixture.binary, "mount", "-o", "cloud=rclone:no-such-remote:x", fixture.container, fixture.mountpoint], timeout: 60)
        XCTAssertEqual(result.status, 1, "\(result)")
        XCTAssertTrue(result.stderr.contains("no-such-remote"), result.stderr)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.stderr)
        XCTAssertFalse(MountTable.isMounted(fixture.mountpoint))
        XCTAssertTrue(rcloneDaemons().isEmpty, "no rclone left behind")
    }
}
