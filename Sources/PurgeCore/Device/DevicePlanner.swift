/// Chooses whose caches a shared device purges, and in what order. Pure:
/// the members' records (their caches, quotas, use and the heads of their
/// purge orders) come in, an order of victims goes out. Each member then
/// purges its own share least recently used first (`PurgePlanner`), which
/// takes the same items, since a share is always a prefix of its order.
///
/// - `quota` (Android's installd, `freeCache` with `CacheTracker`): while a
///   member is over its quota, take the one furthest over (cached bytes /
///   quota), delete its least recently used item, re-rank, repeat; then
///   everyone's items in least-recently-used order.
/// - `lru`: every item in order of `(stamp + its container's last use) / 2`:
///   least recently used across the device, a container used lately
///   keeping its caches longer, one not used for long losing them sooner.
public enum DevicePlanner {
    public struct Member: Equatable, Sendable {
        public var name: String
        /// Its purgeable bytes.
        public var cached: UInt64
        public var quota: UInt64
        public var lastUse: UInt64
        /// The head of its purge order, oldest first.
        public var items: [DeviceMember.Item]

        public init(name: String, cached: UInt64, quota: UInt64, lastUse: UInt64, items: [DeviceMember.Item]) {
            self.name = name
            self.cached = cached
            self.quota = quota
            self.lastUse = lastUse
            self.items = items
        }
    }

    /// One victim: which member, which of its items (its index in the
    /// member's order), how many bytes.
    public struct Victim: Equatable, Sendable {
        public var member: String
        public var item: Int
        public var bytes: UInt64
    }

    /// What each member is asked to purge, in the order members were first chosen.
    public struct Share: Equatable, Sendable {
        public var member: String
        public var bytes: UInt64
        public var items: Int

        public init(member: String, bytes: UInt64, items: Int) {
            self.member = member
            self.bytes = bytes
            self.items = items
        }
    }

    /// Victims, in order, until at least `need` bytes are planned (or every
    /// listed item is).
    public static func victims(for need: UInt64, members: [Member], policy: DevicePolicy) -> [Victim] {
        var planned: UInt64 = 0
        var victims: [Victim] = []
        var next = [Int](repeating: 0, count: members.count)
        func take(_ m: Int) {
            let item = members[m].items[next[m]]
            victims.append(Victim(member: members[m].name, item: next[m], bytes: item.bytes))
            planned = planned.addingClamped(item.bytes)
            next[m] += 1
        }
        guard need > 0 else { return [] }
        if policy == .quota {
            var cached = members.map(\.cached)
            while planned < need {
                // The member furthest over its quota, among those over it with items left.
                var best: Int?
                for m in members.indices where next[m] < members[m].items.count && isOver(cached[m], members[m].quota) {
                    if let b = best, !furtherOver(m, than: b, cached, members) { continue }
                    best = m
                }
                guard let m = best else { break }
                cached[m] = cached[m].subtractingClamped(members[m].items[next[m]].bytes)
                take(m)
            }
        }
        // Then everyone, least recently used first (by the policy's key).
        while planned < need {
            var best: Int?
            for m in members.indices where next[m] < members[m].items.count {
                guard let b = best else { best = m; continue }
                let (key, bestKey) = (key(of: m, members, next, policy), key(of: b, members, next, policy))
                if key < bestKey || (key == bestKey && members[m].name < members[b].name) { best = m }
            }
            guard let m = best else { break }
            take(m)
        }
        return victims
    }

    /// The victims summed by member, in the order members were first chosen.
    public static func shares(of victims: [Victim]) -> [Share] {
        var shares: [Share] = []
        for victim in victims {
            if let i = shares.firstIndex(where: { $0.member == victim.member }) {
                shares[i].bytes = shares[i].bytes.addingClamped(victim.bytes)
                shares[i].items += 1
            } else {
                shares.append(Share(member: victim.member, bytes: victim.bytes, items: 1))
            }
        }
        return shares
    }

    public static func plan(_ need: UInt64, members: [Member], policy: DevicePolicy) -> [Share] {
        shares(of: victims(for: need, members: members, policy: policy))
    }

    /// Over quota: more cached than the quota (any cache at all over a quota of 0).
    static func isOver(_ cached: UInt64, _ quota: UInt64) -> Bool { cached > quota }

    /// Whether `m` is further over its quota than `b`: cached/quota compared
    /// without division (a quota of 0 is infinitely over), then more cached,
    /// then the name.
    static func furtherOver(_ m: Int, than b: Int, _ cached: [UInt64], _ members: [Member]) -> Bool {
        let (mq, bq) = (members[m].quota, members[b].quota)
        if mq == 0 || bq == 0 {
            if mq != bq { return mq == 0 }
        } else {
            let left = cached[m].multipliedFullWidth(by: bq)
            let right = cached[b].multipliedFullWidth(by: mq)
            if left != right { return (left.high, left.low) > (right.high, right.low) }
        }
        if cached[m] != cached[b] { return cached[m] > cached[b] }
        return members[m].name < members[b].name
    }

    static func key(of m: Int, _ members: [Member], _ next: [Int], _ policy: DevicePolicy) -> UInt64 {
        let stamp = members[m].items[next[m]].stamp
        switch policy {
        case .quota: return stamp
        case .lru: return stamp / 2 + members[m].lastUse / 2
        }
    }

    // MARK: quotas

    /// The share of the device's cache space kept for caches, as Android's
    /// `CacheQuotaStrategy` keeps 15% of free space.
    public static let reservePercent: UInt64 = 15

    /// What one member brings to the quota computation.
    public struct QuotaInput: Equatable, Sendable {
        public var name: String
        public var cacheQuota: UInt64?
        public var activeSeconds: UInt64
        public init(name: String, cacheQuota: UInt64?, activeSeconds: UInt64) {
            self.name = name
            self.cacheQuota = cacheQuota
            self.activeSeconds = activeSeconds
        }
    }

    /// Each member's quota: its `cache_quota` if given; else its share of
    /// the reserve R = 15% of `cacheSpace` (the device's space less external
    /// use and what the members hold outside their caches: what would be
    /// free with every cache purged), in proportion to its use (active
    /// seconds) among the members without a quota; equal shares while none
    /// has any use.
    public static func quotas(of members: [QuotaInput], cacheSpace: UInt64) -> [String: UInt64] {
        let reserve = cacheSpace / 100 * reservePercent + cacheSpace % 100 * reservePercent / 100
        let derived = members.filter { $0.cacheQuota == nil }
        let totalUse = derived.reduce(UInt64(0)) { $0.addingClamped($1.activeSeconds) }
        var quotas: [String: UInt64] = [:]
        for member in members {
            if let quota = member.cacheQuota {
                quotas[member.name] = quota
            } else if totalUse == 0 {
                quotas[member.name] = reserve / UInt64(derived.count)
            } else {
                let product = reserve.multipliedFullWidth(by: member.activeSeconds)
                quotas[member.name] = totalUse.dividingFullWidth(product).quotient
            }
        }
        return quotas
    }
}
