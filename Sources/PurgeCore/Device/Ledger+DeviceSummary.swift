/// What a member of a shared device publishes of its purge order.
extension Ledger {
    /// The first `limit` items of the purge order, oldest first, each with
    /// its stamp and the allocated bytes purging it frees (a group's files
    /// together): the items `PurgePlanner` would take, in its order.
    public func purgeOrderHead(limit: Int) -> [DeviceMember.Item] {
        var items: [DeviceMember.Item] = []
        var ordered = index.ordered().makeIterator()
        while items.count < limit, let (item, stamp) = ordered.next() {
            var bytes: UInt64 = 0
            var any = false
            if item.isGroup {
                for f in groupMembers(item.slot) {
                    bytes = bytes.addingClamped(files[Int(f)].allocated)
                    any = true
                }
            } else if purgeState(item.slot).work {
                bytes = files[Int(item.slot)].allocated
                any = true
            }
            if any { items.append(DeviceMember.Item(stamp: stamp, bytes: bytes)) }
        }
        return items
    }
}
