import PurgeCore

/// What kernel passthrough asks of the cloud tier.
extension CloudTier {
    /// Whether `id` is a document of a ubiquitous zone: its data may be
    /// evicted or replaced by a download while it is open, so the kernel
    /// must not read it from a backing file behind the tier's back.
    func tracks(_ id: EntryID) -> Bool {
        withBooks { $0.paths[id] != nil }
    }
}

/// A document of a ubiquitous zone is never read by the kernel from its backing file.
extension CloudTier: ServingPolicy {
    func refusesPassthrough(_ inode: Inode) -> Bool { tracks(inode.key) }
}
