import Foundation
import Glibc
import PurgeCore
import Synchronization
import XCTest

/// `kill -9` of the daemon in the middle of a write: every file outside the
/// purgeable zones that was written and closed before stays intact.
final class DataSafetyTests: MountedTestCase {
    func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SubprocessError("create \(path): \(Errno.name(errno))") }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            guard n > 0 else {
                let code = errno
                close(fd)
                throw SubprocessError("write \(path): \(Errno.name(code))")
            }
            done += n
        }
        guard close(fd) == 0 else { throw SubprocessError("close \(path): \(Errno.name(errno))") }
    }

    func testKill9MidWriteKeepsClosedFiles() throws {
        let m = fixture.mountpoint
        for dir in ["Documents", "Documents/deep", "Library", "Library/Caches", "tmp"] {
            XCTAssertEqual(mkdir(m + "/" + dir, 0o755), 0, "mkdir \(dir): \(Errno.name(errno))")
        }
        let closed: [String: [UInt8]] = [
            "Documents/big.bin": pattern(5 << 20, seed: 1),
            "Documents/deep/small.txt": Array("small but important\n".utf8),
            "top.dat": pattern(123_457, seed: 2),
            "Documents/renamed.bin": pattern(70_000, seed: 3),
            "Documents/empty": [],
        ]
        for (path, bytes) in closed where path != "Documents/renamed.bin" {
            try writeFile(m + "/" + path, bytes)
        }
        try writeFile(m + "/Documents/before-rename", closed["Documents/renamed.bin"]!)
        XCTAssertEqual(rename(m + "/Documents/before-rename", m + "/Documents/renamed.bin"), 0)
        try writeFile(m + "/Library/Caches/cache.bin", pattern(200_000, seed: 4))

        // A writer that keeps writing until the daemon dies under it.
        let written = Atomic<Int>(0)
        let writerError = Mutex<Int32>(0)
        let inflight = m + "/Documents/inflight.bin"
        let fd = open(inflight, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let writerFinished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let chunk = pattern(64 << 10, seed: 5)
            while true {
                let n = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n < 0 {
                    let code = errno
                    writerError.withLock { $0 = code }
                    break
                }
                if written.add(n, ordering: .relaxed).newValue > 1 << 30 { break }
            }
            close(fd)
            writerFinished.signal()
        }
        let deadline = Date().addingTimeInterval(10)
        while written.load(ordering: .relaxed) < 1 << 20, Date() < deadline { usleep(1_000) }
        XCTAssertGreaterThanOrEqual(written.load(ordering: .relaxed), 1 << 20, "the writer got going")

        guard let pid = fixture.daemonPID else { return XCTFail("no daemon pid") }
        // The kill must land mid-write: the writer still writing, and then
        // stopped by a failed write rather than by reaching its 1 GiB.
        XCTAssertEqual(writerFinished.wait(timeout: .now()), .timedOut, "the writer was still writing at the kill")
        XCTAssertEqual(writerError.withLock { $0 }, 0, "no write failed before the kill")
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        XCTAssertEqual(writerFinished.wait(timeout: .now() + 20), .success, "the writer returned after the daemon died")
        XCTAssertNotEqual(writerError.withLock { $0 }, 0, "a write on a dead mount fails")
        XCTAssertLessThanOrEqual(written.load(ordering: .relaxed), 1 << 30, "the writer stopped at a failed write")
        for problem in fixture.unmount() { XCTFail(problem) }
        XCTAssertFalse(MountTable.isMounted(m))

        // The backing store holds every closed file byte for byte.
        for (path, bytes) in closed.sorted(by: { $0.key < $1.key }) {
            let backing = FileManager.default.contents(atPath: fixture.container + "/" + path)
            XCTAssertNotNil(backing, "\(path) missing from the backing store")
            XCTAssertEqual(backing.map(Array.init), bytes, "\(path) differs in the backing store")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: fixture.container + "/Documents/before-rename"))

        // And a remount serves them again.
        try fixture.mount()
        for (path, bytes) in closed {
            XCTAssertEqual(FileManager.default.contents(atPath: m + "/" + path).map(Array.init), bytes, "\(path) after remount")
        }
        XCTAssertFalse((try FileManager.default.contentsOfDirectory(atPath: m)).contains(".purgefs"))
    }
}
