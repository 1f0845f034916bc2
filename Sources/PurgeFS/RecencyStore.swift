import PurgeCore
import PurgeSys
import Synchronization

/// Keeps the purge order across mounts: the ledger's recency snapshot in the
/// state directory, saved when it changed.
final class RecencyStore: Sendable {
    static let fileName = "recency"

    private let directory: StateDirectory
    /// The ledger's clock when last saved: unchanged means nothing to save.
    private let savedClock = Mutex<UInt64>(0)

    init(directory: StateDirectory) {
        self.directory = directory
    }

    /// The snapshot of an earlier mount; nil if there is none, or it is unreadable (said in the log).
    func load() -> RecencySnapshot? {
        do {
            guard let bytes = try directory.read(Self.fileName) else { return nil }
            return try RecencySnapshot(decoding: bytes)
        } catch {
            Diagnostics.note("the saved purge order is unreadable and was set aside: \(error)")
            return nil
        }
    }

    /// Saves the ledger's purge order if it changed since the last save.
    func save(_ state: ContainerState) {
        let snapshot: RecencySnapshot? = state.read { ledger, _ in
            savedClock.withLock { $0 } == ledger.clock.last ? nil : ledger.recencySnapshot()
        }
        guard let snapshot else { return }
        do {
            try directory.replace(Self.fileName, with: snapshot.encoded())
            savedClock.withLock { $0 = snapshot.clock }
        } catch {
            Diagnostics.note("cannot save the purge order: \(error)")
        }
    }
}
