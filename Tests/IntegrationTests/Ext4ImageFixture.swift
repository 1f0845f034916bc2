import Foundation
import Glibc
import XCTest

/// A mount whose container is on an ext4 image, made by the test on a loop
/// device: no reflinks, so purgefs's clones there share whole files (hard
/// links kept private to purgefs) until one of them is modified.
class Ext4ImageTestCase: LoopImageTestCase {
    override var kind: ImageKind { .ext4 }

    /// `allocated` is what `du --block-size=1` says of the container's
    /// regular files (the state directory aside): du counts a file with
    /// several links once, which is how clones share data on ext4.
    /// `clone_savings` is what counting every name on its own would add.
    override func walkFigures() -> (allocated: UInt64, savings: UInt64) {
        let listing = "find '\(container)' -path '\(container)/.purgefs' -prune -o -type f -print0"
        let du = try? Subprocess.run(["sh", "-c", listing + " | du --files0-from=- --block-size=1 -c | tail -n 1"], timeout: 60)
        guard let du, du.status == 0, let total = du.stdout.split(separator: "\t").first.flatMap({ UInt64($0) }) else {
            XCTFail("du of \(container) failed: \(String(describing: du))")
            return (0, 0)
        }
        let everyName = BackingWalk(container).files.values.reduce(UInt64(0)) { $0 + $1.allocated * UInt64($1.names.count) }
        return (total, everyName - total)
    }
}
