/// The filesystem whose behaviour at a power loss `purgefs explore`'s crash
/// states follow (`--model NAME`). What they share: data written since a
/// file's last sync is lost whole (delayed allocation gives it no blocks
/// before writeback), unless a rule below writes it; name changes and size
/// changes (truncate) go into one journal in order and persist up to some
/// point between the last one made durable and the crash; an `fsync` of a
/// directory commits the journal up to its last change there. What differs:
///
/// - `ext4`: default mount options (`data=ordered`, delayed allocation,
///   `auto_da_alloc`). A file renamed over an existing name has its data
///   written before the rename commits (`ext4_rename` calls
///   `ext4_alloc_da_blocks` on the file when the target exists, and
///   `data=ordered` writes allocated blocks before the commit); an `fsync`
///   of a file commits the journal up to its last change (jbd2 commits
///   transactions in order, up to the file's `i_sync_tid`), its name with it.
/// - `ext4-noauto_da_alloc`: the same without the flush on rename.
/// - `xfs`: no flush on rename; an `fsync` forces the log up to the file's
///   last change (`xfs_file_fsync`, `ili_commit_seq`), its name with it.
/// - `btrfs`: `btrfs_rename` only starts writeback of a file renamed over
///   a name (`filemap_flush`/`filemap_fdatawrite_kick`, "so we don't add too
///   much work to the end of the transaction"), and a transaction commit
///   waits for it only with the non-default `flushoncommit`: no flush is
///   modelled. An `fsync` logs the file and its names in the log tree.
/// - `posix`: what POSIX allows, bounded as ALICE (OSDI'14) bounds it. A
///   file's `fsync` commits its data only, never its name (POSIX asks for
///   the directory's); and one reordered write at a time: a page written at
///   k survives while the unsynced pages written before it do not.
///
/// The recording holds no `close(2)`: the flush `auto_da_alloc` (and XFS
/// and btrfs) do at the close of a file truncated to 0 and written again is
/// not modelled, so such a file may be found empty until it is synced.
public enum CrashFilesystemModel: String, CaseIterable, Sendable {
    case ext4
    case ext4NoAutoDaAlloc = "ext4-noauto_da_alloc"
    case xfs
    case btrfs
    case posix

    /// A file renamed over an existing name: its data is written before the rename commits.
    public var flushesOnRenameOver: Bool { self == .ext4 }
    /// A file's `fsync` commits the journal up to its own last name or size change.
    public var syncCommitsNames: Bool { self != .posix }
    /// One unsynced page may survive without those written before it.
    public var reorders: Bool { self == .posix }

    /// `NAME` or `all`, or names separated by commas.
    public static func list(_ text: String) -> [CrashFilesystemModel]? {
        if text == "all" { return allCases }
        var models: [CrashFilesystemModel] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let model = CrashFilesystemModel(rawValue: String(name)) else { return nil }
            if !models.contains(model) { models.append(model) }
        }
        return models.isEmpty ? nil : models
    }

    /// "posix and xfs", "a, b and c".
    public static func sentence(_ models: [CrashFilesystemModel]) -> String {
        let names = models.map(\.rawValue)
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " and " + names.last!
    }
}
