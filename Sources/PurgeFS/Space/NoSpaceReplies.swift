import Synchronization

/// Requests answered `ENOSPC` since the mount (`user.purgefs.enospc`, for
/// `purgefs run`'s summary).
final class NoSpaceReplies: Sendable {
    private let count = Atomic<UInt64>(0)

    func note() { count.add(1, ordering: .relaxed) }

    var total: UInt64 { count.load(ordering: .relaxed) }
}
