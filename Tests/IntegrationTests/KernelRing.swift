import Foundation
import Glibc
import XCTest

/// FUSE over io_uring on this machine: the kernel offers it to a mount only
/// while `enable_uring` is on, so a test that wants it turns it on and puts
/// the old value back at its teardown (whatever the test's outcome).
enum KernelRing {
    static let switchPath = "/sys/module/fuse/parameters/enable_uring"

    /// Turns the ring on for the test; skips where the kernel has none.
    static func enable(for test: XCTestCase) throws { try turn(true, for: test) }

    /// Turns the ring off for the test (the kernel then does not offer it).
    static func disable(for test: XCTestCase) throws { try turn(false, for: test) }

    /// Sets the machine-wide switch and puts its value back at the test's
    /// teardown, whatever the test does (the restore is registered before
    /// the switch is touched, and a restore that fails fails the test).
    /// A kernel without the switch has no ring: a skip. A kernel with it
    /// that the test cannot read or set: a skip, and under CI a failure.
    private static func turn(_ on: Bool, for test: XCTestCase) throws {
        guard FileManager.default.fileExists(atPath: switchPath) else {
            throw XCTSkip("this kernel has no FUSE over io_uring (\(switchPath))")
        }
        guard let old = try? String(contentsOfFile: switchPath, encoding: .utf8) else {
            throw featureUnavailable("cannot read \(switchPath)")
        }
        let wasOn = old.hasPrefix("Y")
        test.addTeardownBlock {
            do {
                try write(wasOn)
            } catch {
                XCTFail("cannot put \(switchPath) back to \(wasOn ? "Y" : "N"): \(error)")
            }
        }
        do {
            try write(on)
        } catch {
            throw featureUnavailable("cannot set \(switchPath) to \(on ? "Y" : "N"): \(error)")
        }
    }

    private static func write(_ on: Bool) throws {
        try (on ? "Y" : "N").write(toFile: switchPath, atomically: false, encoding: .utf8)
    }

    /// What the mount at `mountpoint` says of its requests
    /// (`user.purgefs.transport`), read by a subprocess with a deadline (a
    /// hung mount must not take the test process with it).
    static func transport(at mountpoint: String) -> String {
        guard let result = try? Subprocess.run(
            ["getfattr", "--only-values", "-n", "user.purgefs.transport", mountpoint], timeout: 10)
        else { return "(getfattr did not run)" }
        return result.status == 0 ? result.stdout : "(unreadable: \(result.stderr))"
    }

    /// The transport a ring mount on this machine reports: the online CPUs'
    /// queues and the threads serving each (8, fewer where 64 would not fit).
    static func ringTransport(pinned: Bool = true) -> String {
        let online = max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        return "io_uring \(online)x\(max(1, min(8, 64 / online))) \(pinned ? "pinned" : "free")"
    }

    /// Throws unless the mount's requests come through the ring (the switch
    /// is on, so the kernel offers it): a ring test that cannot use the
    /// ring is a skip, under CI a failure, never a pass through /dev/fuse.
    static func requireRing(at mountpoint: String) throws {
        let transport = transport(at: mountpoint)
        guard transport.hasPrefix("io_uring ") else {
            throw featureUnavailable("the kernel offers the ring but the mount does not use it: \(transport)")
        }
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

/// A skip where a kernel feature cannot be used by the test; under CI
/// (`CI=true`), where scripts/bootstrap runs everything as root on a kernel
/// that offers it, a failure: such a test must never pass by not running.
func featureUnavailable(_ reason: String) -> Error {
    ProcessInfo.processInfo.environment["CI"] == "true" ? SubprocessError("under CI: " + reason) : XCTSkip(reason)
}
