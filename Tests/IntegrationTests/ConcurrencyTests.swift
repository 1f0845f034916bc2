import Foundation
import Glibc
import Synchronization
import XCTest

/// Several threads on one mount at once: what they read back is exactly
/// what was written. No timings: every check is on bytes.
final class ConcurrencyTests: MountedTestCase {
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
        }
        return 0
    }

    static func readAll(_ path: String) -> Result<[UInt8], SubprocessError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(SubprocessError("open \(path): \(Errno.name(errno))")) }
        defer { close(fd) }
        var all: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return .failure(SubprocessError("read \(path): \(Errno.name(errno))"))
            }
            if n == 0 { return .success(all) }
            all += buffer[..<n]
        }
    }

    func testThreadsWritingDistinctFiles() throws {
        let root = fixture.mountpoint
        let threads = 8, filesPerThread = 12
        XCTAssertEqual(mkdir(root + "/w", 0o755), 0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<filesPerThread {
                let path = root + "/w/t\(t)-f\(i)"
                let size = 1 + (t * 7919 + i * 104_729) % (400 << 10)
                let data = pattern(size, seed: UInt64(t * 1000 + i))
                let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                guard fd >= 0 else {
                    let code = errno
                    failures.withLock { $0.append("create \(path): \(Errno.name(code))") }
                    continue
                }
                let code = Self.writeAll(fd, data)
                close(fd)
                if code != 0 { failures.withLock { $0.append("write \(path): \(Errno.name(code))") } }
                switch Self.readAll(path) {
                case .success(let back) where back == data: break
                case .success(let back): failures.withLock { $0.append("\(path): read back \(back.count) bytes differing from the \(data.count) written") }
                case .failure(let error): failures.withLock { $0.append(error.description) }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        // Everything is also in the backing store, byte for byte.
        for t in 0..<threads {
            for i in 0..<filesPerThread {
                let size = 1 + (t * 7919 + i * 104_729) % (400 << 10)
                let backing = try Data(contentsOf: URL(fileURLWithPath: fixture.container + "/w/t\(t)-f\(i)"))
                XCTAssertEqual(Array(backing), pattern(size, seed: UInt64(t * 1000 + i)), "backing t\(t)-f\(i)")
            }
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root + "/w").count, threads * filesPerThread)
    }

    /// One writer appends while readers read the whole file over and over:
    /// every read is a prefix of the final content, sizes never shrink, and
    /// at the end every reader sees all of it.
    func testReadersWhileWriterAppends() throws {
        let path = fixture.mountpoint + "/log"
        let chunks = 400, chunkSize = 3000
        let expected = pattern(chunks * chunkSize, seed: 99)
        let created = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(created, 0)
        guard created >= 0 else { return }
        let writerDone = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let readsSeen = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            if worker == 0 {
                for c in 0..<chunks {
                    let code = Self.writeAll(created, Array(expected[(c * chunkSize)..<((c + 1) * chunkSize)]))
                    if code != 0 {
                        failures.withLock { $0.append("append chunk \(c): \(Errno.name(code))") }
                        break
                    }
                }
                writerDone.store(true, ordering: .releasing)
                return
            }
            var lastSize = 0
            while true {
                let finished = writerDone.load(ordering: .acquiring)
                switch Self.readAll(path) {
                case .failure(let error):
                    failures.withLock { $0.append("reader \(worker): \(error)") }
                    return
                case .success(let got):
                    readsSeen.add(1, ordering: .relaxed)
                    if got.count < lastSize {
                        failures.withLock { $0.append("reader \(worker): size went back from \(lastSize) to \(got.count)") }
                        return
                    }
                    lastSize = got.count
                    if got.count > expected.count || got[...] != expected[..<got.count] {
                        failures.withLock { $0.append("reader \(worker): a read of \(got.count) bytes is not a prefix of what was written") }
                        return
                    }
                    if finished {
                        if got.count != expected.count {
                            failures.withLock { $0.append("reader \(worker): after the writer finished, read \(got.count) of \(expected.count) bytes") }
                        }
                        return
                    }
                }
            }
        }
        close(created)
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertGreaterThanOrEqual(readsSeen.load(ordering: .relaxed), 3)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: fixture.container + "/log"))), expected, "backing content")
    }

    /// Threads creating, renaming and unlinking in one directory while
    /// others list it: no errors, and the final listing is exact.
    func testNamespaceChurnInOneDirectory() throws {
        let dir = fixture.mountpoint + "/churn"
        XCTAssertEqual(mkdir(dir, 0o755), 0)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { t in
            for i in 0..<150 {
                let a = "\(dir)/t\(t)-\(i)", b = "\(dir)/t\(t)-\(i)-renamed"
                let fd = open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                if fd < 0 { let e = errno; failures.withLock { $0.append("create \(a): \(Errno.name(e))") }; continue }
                _ = Self.writeAll(fd, Array("t\(t) i\(i)".utf8))
                close(fd)
                if rename(a, b) != 0 { let e = errno; failures.withLock { $0.append("rename \(a): \(Errno.name(e))") } }
                if i % 3 == 0, unlink(b) != 0 { let e = errno; failures.withLock { $0.append("unlink \(b): \(Errno.name(e))") } }
                if i % 10 == 0, (try? FileManager.default.contentsOfDirectory(atPath: dir)) == nil {
                    failures.withLock { $0.append("readdir failed") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        var expected = Set<String>()
        for t in 0..<4 { for i in 0..<150 where i % 3 != 0 { expected.insert("t\(t)-\(i)-renamed") } }
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), expected)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: fixture.container + "/churn")), expected)
        XCTAssertEqual(try String(contentsOfFile: dir + "/t2-7-renamed", encoding: .utf8), "t2 i7")
    }
}
