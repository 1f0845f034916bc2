import Foundation
import Glibc

/// What each descriptor of process `pid` refers to (the targets of the
/// links in `/proc/PID/fd`), by descriptor number; empty when it cannot be read.
func openDescriptors(of pid: pid_t) -> [(descriptor: String, target: String)] {
    let directory = "/proc/\(pid)/fd"
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    return descriptors.compactMap { descriptor in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + descriptor)).map { (descriptor, $0) }
    }
}
