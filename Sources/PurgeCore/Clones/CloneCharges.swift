/// How a clone group's data is charged: every physical byte once.
///
/// Members are taken in order (the original first): each is charged the
/// bytes of its extents that no earlier member holds, so the group's
/// charges add up to the union of its extents. A member's `savings` are
/// the bytes it holds but is not charged for, and `shared` the bytes it
/// holds that some other member holds too.
public struct CloneCharges: Equatable, Sendable {
    public struct Charge: Equatable, Sendable {
        /// Bytes the file references (its extents).
        public var held: UInt64
        /// Bytes charged to it in `allocated`.
        public var charged: UInt64
        public var savings: UInt64 { held - charged }
        /// Bytes it shares with other members.
        public var shared: UInt64
    }

    public let charges: [Charge]

    /// `members[i]` is the extent list of the i-th member, in charging order.
    public init(members: [[FileExtent]]) {
        let sets = members.map(ExtentSet.init)
        var covered = ExtentSet()
        var charges: [Charge] = []
        for (i, extents) in members.enumerated() {
            let unmapped = extents.filter(\.isUnmapped).reduce(0) { $0 + $1.length }
            let own = sets[i]
            var charged = unmapped
            for range in own.ranges { charged += covered.insert(range.start, length: range.end - range.start) }
            var others = ExtentSet()
            for (j, set) in sets.enumerated() where j != i {
                for range in set.ranges { others.insert(range.start, length: range.end - range.start) }
            }
            var shared: UInt64 = 0
            for range in own.ranges { shared += others.overlap(range.start, range.end) }
            charges.append(Charge(held: own.byteCount + unmapped, charged: charged, shared: shared))
        }
        self.charges = charges
    }

    /// The group's bytes on disk: each physical byte once.
    public var charged: UInt64 { charges.reduce(0) { $0 + $1.charged } }
}
