import Foundation
import Glibc
import XCTest

/// FUSE over io_uring on this machine: the kernel offers it to a mount only
/// while `enable_uring` is on, so a test that wants it turns it on and puts
/// the old value back at its teardown (whatever the test's outcome).
enum KernelRing {
    static let switchPath = "/sys/module/fuse/parameters/enable_uring"

    /// Turns the ring on for the test; skips where the kernel has none.
    static func enable(for test: XCTestCase) throws {
        guard let old = try? String(contentsOfFile: switchPath, encoding: .utf8) else {
            throw XCTSkip("this kernel has no FUSE over io_uring (\(switchPath))")
        }
        try write(true)
        test.addTeardownBlock { try? write(old.hasPrefix("Y")) }
    }

    private static func write(_ on: Bool) throws {
        try (on ? "Y" : "N").write(toFile: switchPath, atomically: false, encoding: .utf8)
    }

    /// The io_uring descriptors `pid` holds: one a ring thread.
    static func rings(of pid: pid_t) -> Int {
        openDescriptors(of: pid).filter { $0.target == ring }.count
    }

    private static let ring = "anon_inode:[io_uring]"

    /// Threads of `pid` allowed on one CPU only (`Cpus_allowed_list`).
    static func threadsOnOneCPU(of pid: pid_t) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.filter { task in
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                  let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
            else { return false }
            let list = line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
            return !list.contains("-") && !list.contains(",")
        }.count
    }

    /// Completions the daemon's rings have posted, from the kernel's own
    /// accounting (`CqTail` in /proc/PID/fdinfo of each io_uring descriptor);
    /// nil when the process holds no ring.
    static func completions(of pid: pid_t) -> Int? {
        var total: Int?
        for (descriptor, target) in openDescriptors(of: pid) where target == ring {
            guard let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8) else { continue }
            for line in info.split(separator: "\n") where line.hasPrefix("CqTail:") {
                total = (total ?? 0) + (Int(line.dropFirst("CqTail:".count).trimmingCharacters(in: .whitespaces)) ?? 0)
            }
        }
        return total
    }
}
