import Dispatch
import Synchronization

/// A round of work run every `period` on a queue of its own, or at once when
/// kicked, until stopped: the shape of the space monitor and the
/// verification of changes behind the mount. Nothing waits for a round but
/// `stop`, at shutdown.
final class BackgroundLoop: Sendable {
    private let label: String
    private let period: DispatchTimeInterval
    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(label: String, period: DispatchTimeInterval) {
        self.label = label
        self.period = period
    }

    /// True once `stop` was called: a long round checks it to give up early.
    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    func start(_ round: @escaping @Sendable () -> Void) {
        DispatchQueue(label: label).async { [self] in
            while !isStopping {
                _ = wake.wait(timeout: .now() + period)
                if isStopping { break }
                round()
            }
            finished.signal()
        }
    }

    /// Runs a round now rather than at the end of the period.
    func kick() {
        wake.signal()
    }

    /// Stops the loop and waits for the round in progress to end.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        finished.wait()
    }
}
