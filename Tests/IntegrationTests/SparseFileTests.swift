internal import CLinux
import Foundation
import Glibc
import XCTest

/// Holes allocate nothing (issue 12, item 3): a truncate or a write past the
/// end of file that only makes a hole asks for no room on a nearly full
/// simulated device, purges nothing and never fails with `ENOSPC`; a size
/// past what the backing filesystem allows is its `EFBIG`, as natively;
/// data written into a hole, and `fallocate`, still ask for what they
/// allocate.
final class SparseFileTests: MountedTestCase {
    /// About 2 MiB available and 1 MiB purgeable; marks at 0 so the monitor
    /// never purges on its own.
    override var mountOptions: [String] { ["capacity=64M", "external=61M", "low=0", "high=0"] }

    override func prepareContainer() throws {
        makeDirectories(fixture.container, ["Documents", "caches"])
        XCTAssertEqual(writeBytes(fixture.container + "/caches/c.bin", tiled(MiB, seed: 1)), 0)
    }

    private var m: String { fixture.mountpoint }

    private func assertNothingPurged(_ label: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(numberAttr(m, "purged_files"), 0, "\(label): nothing purged", file: file, line: line)
        XCTAssertTrue(exists(fixture.container + "/caches/c.bin"), "\(label): the cache file is still there", file: file, line: line)
    }

    private func errnoOf(_ result: Int32) -> Int32 { result == 0 ? 0 : errno }

    func testTruncatePastTheDeviceMakesAHole() throws {
        let available = try XCTUnwrap(numberAttr(m, "available"))
        XCTAssertLessThan(available, 4 * UInt64(MiB), "the device is nearly full")
        let image = m + "/Documents/disk.img"
        XCTAssertEqual(writeBytes(image, []), 0)
        // `truncate -s 10G disk.img`: as on a real device of 1 GiB.
        XCTAssertEqual(errnoOf(truncate(image, 10 << 30)), 0, "truncate -s 10G on a 64 MiB device: \(Errno.name(errno))")
        XCTAssertEqual(fileSize(image), 10 << 30)
        XCTAssertEqual(numberAttr(image, "allocated"), 0, "a hole allocates nothing")
        XCTAssertEqual(numberAttr(m, "available"), available, "available is unchanged")
        // Through an open descriptor (ftruncate), past the device again.
        let fd = open(image, O_RDWR | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(errnoOf(ftruncate(fd, 20 << 30)), 0, "ftruncate to 20 GiB: \(Errno.name(errno))")
        close(fd)
        XCTAssertEqual(fileSize(image), 20 << 30)
        assertNothingPurged("after truncating up")
        XCTAssertEqual(numberAttr(m + "/Documents", "size"), 20 << 30, "the logical size counts the hole")
        XCTAssertEqual(numberAttr(m + "/Documents", "allocated"), 0)
    }

    /// pjdfstest `truncate/12.t` and `ftruncate/12.t`: the same errno as the
    /// native directory (ext4 answers `EFBIG`), and the size is unchanged.
    func testTruncateBeyondTheLargestFileIsTheBackingFilesystemsError() throws {
        let huge: off_t = 999_999_999_999_999
        var outcomes: [String: [Int32]] = [:]
        for (place, root) in [("native", fixture.native), ("mount", m)] {
            let path = root + "/f"
            XCTAssertEqual(writeBytes(path, []), 0)
            let byPath = errnoOf(truncate(path, huge))
            let fd = open(path, O_RDWR | O_CLOEXEC)
            let byDescriptor = errnoOf(ftruncate(fd, huge))
            close(fd)
            XCTAssertEqual(fileSize(path), byPath == 0 ? Int64(huge) : 0, "\(place): the size after a refused truncate")
            outcomes[place] = [byPath, byDescriptor]
        }
        XCTAssertEqual(outcomes["mount"], outcomes["native"],
                       "truncate and ftruncate to \(huge): mount \(outcomes["mount"]!.map(Errno.name)), native \(outcomes["native"]!.map(Errno.name))")
        XCTAssertNotEqual(outcomes["mount"]?.first, ENOSPC, "a hole never needs room")
        assertNothingPurged("after the refused truncates")
    }

    /// A write far past the end of file asks for the bytes it writes, not the hole before them.
    func testWritePastTheEndAsksForTheBytesWrittenOnly() throws {
        let path = m + "/Documents/sparse"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let data = tiled(8192, seed: 2)
        let offset: off_t = 5 << 30
        let written = data.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, offset) }
        XCTAssertEqual(written, data.count, "pwrite 8 KiB at 5 GiB on a nearly full 64 MiB device: \(Errno.name(errno))")
        close(fd)
        XCTAssertEqual(fileSize(path), Int64(offset) + 8192)
        XCTAssertLessThanOrEqual(try XCTUnwrap(numberAttr(path, "allocated")), 64 << 10, "only the data is allocated")
        assertNothingPurged("after the write past the end")
    }

    /// Data written into a hole allocates: it asks for room like any write,
    /// purges first, and fails with `ENOSPC` when nothing purgeable is left,
    /// so a sparse file cannot fill the simulated device past its capacity.
    func testFillingAHoleAsksForRoom() throws {
        let path = m + "/Documents/disk.img"
        XCTAssertEqual(writeBytes(path, []), 0)
        XCTAssertEqual(errnoOf(truncate(path, 1 << 30)), 0, "truncate -s 1G: \(Errno.name(errno))")
        let important = try XCTUnwrap(numberAttr(m, "available_important"))
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        let chunk = tiled(MiB, seed: 3)
        var written = 0
        var failure: Int32 = 0
        while written < 16 * MiB {
            let n = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(written)) }
            if n < 0 { failure = errno; break }
            written += n
        }
        close(fd)
        XCTAssertEqual(failure, ENOSPC, "filling the hole beyond available + purgeable: \(Errno.name(failure)) after \(written) bytes")
        XCTAssertLessThanOrEqual(UInt64(written), important, "no more data than available + purgeable went into the hole")
        XCTAssertEqual(numberAttr(m, "purged_files"), 1, "the write purged the cache file before ENOSPC")
        XCTAssertEqual(fileSize(path), 1 << 30, "the size is the truncate's")
    }

    /// `fallocate` asks for the blocks it reserves, whether or not it changes the size.
    func testFallocateStillAsksForWhatItReserves() throws {
        let path = m + "/Documents/reserved"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        XCTAssertEqual(errnoOf(clinux_fallocate(fd, 0, 0, 1 << 30)), ENOSPC, "fallocate 1 GiB")
        XCTAssertEqual(errnoOf(clinux_fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 30)), ENOSPC, "fallocate --keep-size 1 GiB")
        XCTAssertEqual(errnoOf(clinux_fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 1 << 30)), ENOSPC, "fallocate --zero-range 1 GiB")
        XCTAssertEqual(fileSize(path), 0)
        XCTAssertEqual(numberAttr(path, "allocated"), 0, "nothing was reserved")
        XCTAssertEqual(errnoOf(clinux_fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 256 << 10)), 0, "a reservation that fits")
        XCTAssertEqual(numberAttr(path, "allocated"), 256 << 10)
        XCTAssertEqual(errnoOf(clinux_fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 256 << 10)), 0, "punching asks nothing")
    }
}
