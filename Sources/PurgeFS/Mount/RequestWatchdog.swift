import Dispatch
import PurgeSys
import Synchronization

/// Keeps the requests being handled now, and logs one that has waited long
/// (its operation, its caller, and the kernel's view of the thread handling
/// it), so that a hang says where it is. It only reads: it never answers,
/// cancels or waits for a request.
final class RequestWatchdog: Sendable {
    private struct InFlight {
        let operation: StaticString
        let thread: Int32
        let caller: Int32
        let started: UInt64
        var reported = false
    }

    /// Requests, each with the address of libfuse's request. A list, not a
    /// dictionary: it holds as many as there are threads serving, a few, and
    /// a scan of a few is cheaper than hashing at every request's start and
    /// end (and grows no storage once it has held that many).
    private let inFlight = Mutex<[(key: UInt, entry: InFlight)]>([])
    private let stopped = Atomic<Bool>(false)
    /// How long a request may take before it is logged.
    let threshold: Duration

    init(threshold: Duration = RequestWatchdog.configuredThreshold) {
        self.threshold = threshold
    }

    /// `PURGEFS_WATCHDOG_SECONDS`, else 30 s.
    static var configuredThreshold: Duration {
        CurrentProcess.environmentValue("PURGEFS_WATCHDOG_SECONDS").flatMap(Double.init).map { .milliseconds(Int64($0 * 1000)) }
            ?? .seconds(30)
    }

    func begin(_ request: UInt, _ operation: StaticString, caller: Int32) {
        let entry = InFlight(operation: operation, thread: ThreadInfo.currentID, caller: caller, started: Self.now())
        inFlight.withLock { $0.append((request, entry)) }
    }

    func end(_ request: UInt) {
        inFlight.withLock { list in
            guard let index = list.lastIndex(where: { $0.key == request }) else { return }
            list.swapAt(index, list.count - 1)
            list.removeLast()
        }
    }

    func start() {
        DispatchQueue(label: "purgefs.request-watchdog").async { [self] in
            let period = max(threshold / 4, .milliseconds(100))
            while !stopped.load(ordering: .relaxed) {
                CurrentProcess.sleep(milliseconds: Self.milliseconds(period))
                check()
            }
        }
    }

    func stop() { stopped.store(true, ordering: .relaxed) }

    private func check() {
        let now = Self.now()
        let limit = UInt64(Self.milliseconds(threshold)) * 1_000_000
        let late: [InFlight] = inFlight.withLock { table in
            var late: [InFlight] = []
            for index in table.indices {
                let entry = table[index].entry
                guard !entry.reported && now &- entry.started > limit && now > entry.started else { continue }
                table[index].entry.reported = true
                late.append(entry)
            }
            return late
        }
        // Described after the lock: reading /proc takes time.
        for entry in late {
            let seconds = Double(now - entry.started) / 1e9
            Diagnostics.note("watchdog: a \(entry.operation) request from pid \(entry.caller) is unanswered after "
                + "\(Int(seconds)) s; \(ThreadInfo.describe(entry.thread))")
        }
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The wall clock: a clock step delays or hastens a log line, nothing more.
    private static func now() -> UInt64 { WallClock.nanoseconds() }
}
