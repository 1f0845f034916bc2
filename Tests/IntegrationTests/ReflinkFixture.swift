internal import CLinux
import Foundation
import Glibc
import XCTest

/// A mount whose container is on an XFS image with reflinks (`mkfs.xfs -m
/// reflink=1`), made by the test on a loop device: clones share extents.
class ReflinkTestCase: LoopImageTestCase {
    override var kind: ImageKind { .xfs }

    /// Files with shared extents are charged the union of their physical
    /// extents (each byte once), the others their blocks.
    override func walkFigures() -> (allocated: UInt64, savings: UInt64) {
        var union: [(UInt64, UInt64)] = []
        var held: UInt64 = 0
        var plain: UInt64 = 0
        let root = container
        let enumerator = FileManager.default.enumerator(atPath: root)!
        while let name = enumerator.nextObject() as? String {
            if name == ".purgefs" { enumerator.skipDescendants(); continue }
            let path = root + "/" + name
            var st = stat()
            guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { continue }
            let (extents, shared) = Self.fiemap(path)
            if shared {
                for (start, length) in extents { union.append((start, start + length)); held += length }
            } else {
                plain += UInt64(st.st_blocks) * 512
            }
        }
        union.sort { $0.0 < $1.0 }
        var total: UInt64 = 0
        var end: UInt64 = 0
        for (start, stop) in union {
            if stop <= end { continue }
            total += stop - max(start, end)
            end = stop
        }
        return (plain + total, held - total)
    }

    /// Physical extents of a file, and whether any is shared.
    static func fiemap(_ path: String) -> ([(UInt64, UInt64)], Bool) {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return ([], false) }
        defer { close(fd) }
        var out = [clinux_extent](repeating: clinux_extent(), count: 4096)
        let n = out.withUnsafeMutableBufferPointer { clinux_fiemap(fd, 0, 1, $0.baseAddress, UInt32($0.count)) }
        guard n > 0 else { return ([], false) }
        let extents = out[..<Int(n)]
        return (extents.map { ($0.physical, $0.length) }, extents.contains { $0.flags & clinux_FIEMAP_EXTENT_SHARED != 0 })
    }
}

/// copy_file_range(2) for the tests.
func clinuxCopy(_ source: Int32, _ inOffset: inout Int64, _ destination: Int32, _ outOffset: inout Int64, _ length: Int) -> Int {
    clinux_copy_file_range(source, &inOffset, destination, &outOffset, length, 0)
}
