import Dispatch
import PurgeCore
import PurgeSys
import Synchronization

/// Watches available space and purges when it drops below the low mark,
/// until it is back at the high mark (`PurgeMonitor` keeps the hysteresis).
/// It looks four times a second, and at once when kicked (a change of
/// capacity or external), so it reacts within a second to writes, to
/// `setfattr` and to the real device filling from outside. It also saves the
/// purge order now and then, so a crash loses only the last seconds of it.
final class SpaceMonitor: Sendable {
    private let state: ContainerState
    private let purger: Purger
    private let recency: RecencyStore
    /// With `optimize_storage`: evicts uploaded documents for this many bytes once nothing is purgeable; returns bytes freed.
    private let evict: (@Sendable (UInt64) -> UInt64)?
    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    static let tick = DispatchTimeInterval.milliseconds(250)
    /// How often the purge order is saved while files are being used.
    static let saveEvery: UInt64 = 5_000_000_000

    init(state: ContainerState, purger: Purger, recency: RecencyStore, evict: (@Sendable (UInt64) -> UInt64)? = nil) {
        self.evict = evict
        self.state = state
        self.purger = purger
        self.recency = recency
    }

    func start() {
        DispatchQueue(label: "purgefs.space-monitor").async { [self] in
            var lastSave = WallClock.nanoseconds()
            while !stopping.load(ordering: .acquiring) {
                _ = wake.wait(timeout: .now() + Self.tick)
                if stopping.load(ordering: .acquiring) { break }
                let target = state.monitorTarget()
                if target > 0 && purger.purge(.bytes(target), reason: .monitor) == 0 && (evict?(target) ?? 0) == 0 {
                    state.stopMonitorEpisode()  // nothing purgeable left
                }
                let now = WallClock.nanoseconds()
                if now - lastSave >= Self.saveEvery {
                    recency.save(state)
                    lastSave = now
                }
            }
            finished.signal()
        }
    }

    /// Looks now rather than at the next tick.
    func kick() {
        wake.signal()
    }

    /// Stops the loop and waits for it to finish its round.
    func stop() {
        stopping.store(true, ordering: .releasing)
        wake.signal()
        finished.wait()
    }
}
