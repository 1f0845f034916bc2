/// The ledger's index from identity to slot: an open-addressing hash table
/// that stores only the 4-byte slot reference. The identity itself is read
/// from the record the slot points to, so a million files cost about 5 MB
/// here instead of the 40 MB a `[EntryID: NodeRef]` dictionary takes.
///
/// Linear probing with backward-shift deletion (no tombstones); the table
/// doubles at three-quarters full. The caller passes the record arrays in,
/// so they are borrowed while the table is changed.
///
/// A bucket holds the reference (27 bits of slot and the directory bit) and
/// 4 bits of the identity's hash: a probe reads the record (a likely cache
/// miss) only when those bits match, so a search for an identity that is
/// not there (every new file at mount) reads about one record, not eight.
struct IdentityTable: Sendable {
    private static let empty = UInt32.max
    /// Slots must stay below this (the all-ones bucket is `empty`): 134 million records.
    static let slotLimit: UInt32 = (1 << 27) - 1
    private var buckets: [UInt32] = Array(repeating: IdentityTable.empty, count: 16)
    private(set) var count = 0

    /// A record arrays view: which identity a reference holds.
    struct Records {
        let files: [FileRecord]
        let directories: [DirectoryRecord]

        @inline(__always)
        func id(of ref: NodeRef) -> EntryID {
            ref.isDirectory ? directories[Int(ref.slot)].id : files[Int(ref.slot)].id
        }
    }

    private var mask: Int { buckets.count - 1 }

    /// Buckets allocated (entries are at most 3/4 of them).
    var bucketCount: Int { buckets.count }

    /// A fast mix of both numbers (splitmix64's finaliser): inode numbers are
    /// dense, so their low bits alone would cluster.
    @inline(__always)
    private static func hash(_ id: EntryID) -> Int {
        var x = id.inode ^ (id.device &* 0x9E37_79B9_7F4A_7C15)
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: x ^ (x >> 31))
    }

    /// The tag: hash bits the bucket index does not use.
    @inline(__always)
    private static func tag(_ hash: Int) -> UInt32 { UInt32(truncatingIfNeeded: UInt(bitPattern: hash) >> 60) }

    @inline(__always)
    private static func bucket(_ ref: NodeRef, tag: UInt32) -> UInt32 {
        tag << 28 | (ref.isDirectory ? 1 << 27 : 0) | ref.slot
    }

    @inline(__always)
    private static func ref(_ bucket: UInt32) -> NodeRef {
        let slot = bucket & slotLimit
        return bucket & (1 << 27) != 0 ? .directory(slot) : .file(slot)
    }

    func find(_ id: EntryID, in records: Records) -> NodeRef? {
        let hash = Self.hash(id)
        let tag = Self.tag(hash)
        var i = hash & mask
        while buckets[i] != Self.empty {
            if buckets[i] >> 28 == tag {
                let ref = Self.ref(buckets[i])
                if records.id(of: ref) == id { return ref }
            }
            i = (i + 1) & mask
        }
        return nil
    }

    /// Adds `ref` for the identity its record holds; the identity must be new.
    mutating func insert(_ ref: NodeRef, in records: Records) {
        precondition(ref.slot < Self.slotLimit, "purgefs: more records than the identity table holds")
        if (count + 1) * 4 > buckets.count * 3 { grow(to: buckets.count * 2, records) }
        let hash = Self.hash(records.id(of: ref))
        var i = hash & mask
        while buckets[i] != Self.empty { i = (i + 1) & mask }
        buckets[i] = Self.bucket(ref, tag: Self.tag(hash))
        count += 1
    }

    /// Removes the entry of `id`, while its record still holds that identity.
    mutating func remove(_ id: EntryID, in records: Records) {
        let hash = Self.hash(id)
        let tag = Self.tag(hash)
        var i = hash & mask
        while buckets[i] != Self.empty {
            if buckets[i] >> 28 == tag && records.id(of: Self.ref(buckets[i])) == id { break }
            i = (i + 1) & mask
        }
        guard buckets[i] != Self.empty else { return }
        // Backward shift: pull later entries of the probe run into the hole
        // when their home bucket is not between the hole and them.
        var hole = i
        var j = (i + 1) & mask
        while buckets[j] != Self.empty {
            let home = Self.hash(records.id(of: Self.ref(buckets[j]))) & mask
            let between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j)
            if !between {
                buckets[hole] = buckets[j]
                hole = j
            }
            j = (j + 1) & mask
        }
        buckets[hole] = Self.empty
        count -= 1
    }

    /// Makes room for `capacity` entries without growing along the way.
    mutating func reserveCapacity(_ capacity: Int, _ records: Records) {
        var size = buckets.count
        while capacity * 4 > size * 3 { size *= 2 }
        if size > buckets.count { grow(to: size, records) }
    }

    private mutating func grow(to size: Int, _ records: Records) {
        let old = buckets
        buckets = Array(repeating: Self.empty, count: size)
        for raw in old where raw != Self.empty {
            var i = Self.hash(records.id(of: Self.ref(raw))) & mask
            while buckets[i] != Self.empty { i = (i + 1) & mask }
            buckets[i] = raw
        }
    }
}
