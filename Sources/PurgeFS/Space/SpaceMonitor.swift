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
    /// On a shared device its round decides instead (`SharedDevice.round`).
    private let device: SharedDevice?
    private let loop = BackgroundLoop(label: "purgefs.space-monitor", period: SpaceMonitor.tick)
    /// When the purge order was last saved (wall clock, nanoseconds).
    private let lastSave = Atomic<UInt64>(WallClock.nanoseconds())
    /// Rounds finished since the mount (`user.purgefs.monitor_rounds`): two
    /// more than a reader saw means a whole round, purge included, began after the read.
    let rounds = Atomic<UInt64>(0)

    static let tick = DispatchTimeInterval.milliseconds(250)
    /// How often the purge order is saved while files are being used.
    static let saveEvery: UInt64 = 5_000_000_000

    init(state: ContainerState, purger: Purger, recency: RecencyStore, device: SharedDevice? = nil,
         evict: (@Sendable (UInt64) -> UInt64)? = nil) {
        self.evict = evict
        self.device = device
        self.state = state
        self.purger = purger
        self.recency = recency
    }

    func start() {
        loop.start { [self] in
            let target = device == nil ? state.monitorTarget() : 0
            device?.round()
            if target > 0 && purger.purge(.bytes(target), reason: .monitor) == 0 && (evict?(target) ?? 0) == 0 {
                state.stopMonitorEpisode()  // nothing purgeable left
            }
            let now = WallClock.nanoseconds()
            if now - lastSave.load(ordering: .relaxed) >= Self.saveEvery {
                recency.save(state)
                lastSave.store(now, ordering: .relaxed)
            }
            rounds.add(1, ordering: .releasing)
        }
    }

    /// Looks now rather than at the next tick.
    func kick() { loop.kick() }

    /// Stops the loop and waits for it to finish its round.
    func stop() { loop.stop() }
}
