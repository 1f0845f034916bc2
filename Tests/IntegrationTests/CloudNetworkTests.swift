import Foundation
import Glibc
import PurgeCore
import XCTest

/// The network's faults for app tests: `purgefs cloud offline|online|touch`,
/// fault rules on the cloud tier's own calls, against a directory remote
/// (the fault layer is the same for every store).
final class CloudNetworkFaultTests: CloudTestCase {
    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["Documents", "other"])
        XCTAssertEqual(mkdir(remote, 0o755), 0)
    }

    func purgefs(_ arguments: String...) throws -> CommandResult {
        try Subprocess.run([fixture.binary] + arguments, timeout: 30)
    }

    func testAnEvictedDocumentOpenedOfflineFailsAtOnceAndOpensOnceOnline() throws {
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/far.bin"
        let bytes = tiled(200_000, seed: 1)
        XCTAssertEqual(writeBytes(doc, bytes), 0)
        waitUploaded(doc)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
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

    /// `--op download --delay` longer than the open's deadline
    /// (`PURGEFS_DOWNLOAD_TIMEOUT`, 1 s here): the open fails with EIO after
    /// the deadline, not after the delay; the transfer ends in the background.
    func testASlowDownloadHoldsTheOpenNoLongerThanItsTimeout() throws {
        setenv("PURGEFS_DOWNLOAD_TIMEOUT", "1", 1)
        defer { unsetenv("PURGEFS_DOWNLOAD_TIMEOUT") }
        try fixture.mount(options: cloudOptions())
        let doc = fixture.mountpoint + "/Documents/slow"
        let bytes = tiled(50_000, seed: 3)
        XCTAssertEqual(writeBytes(doc, bytes), 0)
        waitUploaded(doc)
        XCTAssertEqual(setAttr(doc, pf("evict"), "1"), 0)
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
