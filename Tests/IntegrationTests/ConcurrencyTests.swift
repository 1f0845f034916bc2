import Foundation
import Glibc
import Synchronization
import TestSupport
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

    /// Eight threads copy (as `cp` does: a whole-file `copy_file_range`,
    /// which makes clones), write, truncate, rename, unlink and recreate ten
    /// shared names at random. The daemon must live through it, and at the
    /// end every name reads what the backing store holds under it, and the
    /// root's figures are the backing store's.
    func testCopiesWritesRenamesAndUnlinksAtOnce() throws {
        let m = fixture.mountpoint, c = fixture.container
        let names = (0..<10).map { "f\($0)" }
        for (i, name) in names.enumerated() { XCTAssertEqual(Self.writeAll(path: m + "/" + name, pattern(1 + i * 20_011, seed: UInt64(i))), 0) }
        let lost = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            var random = SeededGenerator(seed: UInt64(t + 1))
            func pick(_ bound: Int) -> Int { Int.random(in: 0..<bound, using: &random) }
            for step in 0..<800 {
                let a = m + "/" + names[pick(names.count)], b = m + "/" + names[pick(names.count)]
                var failure: Int32 = 0
                switch pick(10) {
                case 0, 1, 2: failure = Self.copyWhole(a, to: b)
                case 3, 4:
                    let fd = open(a, O_WRONLY | O_CLOEXEC)
                    if fd >= 0 {
                        let bytes = pattern(1 + pick(5000), seed: UInt64(t * 1000 + step))
                        if bytes.withUnsafeBytes({ pwrite(fd, $0.baseAddress, $0.count, off_t(pick(100_000))) }) < 0 { failure = errno }
                        close(fd)
                    } else { failure = errno }
                case 5: if truncate(a, off_t(pick(100_000))) != 0 { failure = errno }
                case 6: if rename(a, b) != 0 { failure = errno }
                case 7: if unlink(a) != 0 { failure = errno }
                case 8: failure = Self.writeAll(path: a, pattern(1 + pick(50_000), seed: UInt64(t * 1000 + step)))
                default: if case .failure = Self.readAll(a) { failure = errno }
                }
                if failure == ENOTCONN || failure == ECONNABORTED {
                    lost.withLock { $0.append("\(step) on thread \(t): \(Errno.name(failure))") }
                    return
                }
            }
        }
        XCTAssertEqual(lost.withLock { $0 }, [], "the daemon died")
        var files = 0, size = 0
        for name in names {
            guard let backing = FileManager.default.contents(atPath: c + "/" + name) else { continue }
            files += 1
            size += backing.count
            XCTAssertEqual(try? Self.readAll(m + "/" + name).get(), [UInt8](backing), "\(name) reads what the backing store holds")
        }
        XCTAssertEqual(numberAttr(m, "files"), UInt64(files))
        XCTAssertEqual(numberAttr(m, "size"), UInt64(size))
    }

    /// Copies `source` over `destination` the way coreutils `cp` does.
    static func copyWhole(_ source: String, to destination: String) -> Int32 {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return errno }
        defer { close(input) }
        var output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if output < 0 && errno == EEXIST { output = open(destination, O_WRONLY | O_TRUNC | O_CLOEXEC) }
        guard output >= 0 else { return errno }
        defer { close(output) }
        var inOffset: Int64 = 0, outOffset: Int64 = 0
        while true {
            let n = clinuxCopy(input, &inOffset, output, &outOffset, 1 << 30)
            if n < 0 { return errno }
            if n == 0 { return 0 }
        }
    }

    static func writeAll(path: String, _ bytes: [UInt8]) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return writeAll(fd, bytes)
    }
}
