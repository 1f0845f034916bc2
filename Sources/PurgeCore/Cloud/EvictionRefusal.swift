/// Why a cloud document's local data cannot be evicted now: what
/// `user.purgefs.evictable` answers, and what `purgefs evict` says when the
/// attribute write is refused (`EBUSY`, whatever the reason).
///
/// Precedence, when several hold: not uploaded, changed since its upload,
/// open, shared with a clone (an evicted file is `evicted`, and evicting it
/// again does nothing).
public enum EvictionRefusal: String, CaseIterable, Sendable {
    /// No upload of it has been recorded yet.
    case notUploaded = "not_uploaded"
    /// It was uploaded, but its content changed since (its upload is due).
    case changed
    /// A process has it open, or is opening it.
    case open
    /// Its clones share its data, which it cannot leave to them without a
    /// copy (a linked clone's original): dropping it would drop theirs.
    case shared

    /// The reason in words, after "cannot be evicted now: ".
    public var explanation: String {
        switch self {
        case .notUploaded: return "it is not uploaded yet (uploads start about a second after its last close)"
        case .changed: return "it changed since its upload (the new content is not uploaded yet)"
        case .open: return "it is open"
        case .shared: return "its clones share its data (evict, change or remove them first)"
        }
    }

    /// What `user.purgefs.evictable` reads for a file that can be evicted now.
    public static let evictableValue = "1"
    /// What it reads for a file whose local data is gone already.
    public static let evictedValue = "evicted"
}
