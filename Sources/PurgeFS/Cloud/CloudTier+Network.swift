import PurgeCore
import PurgeSys

/// The root's `user.purgefs.cloud` (`purgefs cloud offline|online|touch`):
/// the network as the tier sees it, for app tests.
extension CloudTier {
    /// `offline`: every remote call fails at once as unreachable (uploads
    /// stay queued, an open of an evicted document gets `EIO`); `online`:
    /// calls go through again and every queued upload, and the journalled
    /// deletes and renames, are due at once;
    /// `touch PATH`: the remote copy of the document PATH (relative to the
    /// container) is replaced as another device saving it would
    /// (`CloudLink.touch`), so `download_status` reads `downloaded`.
    /// `EINVAL` for another command, `ENOENT` for a document with no
    /// remote copy, `EIO` when the remote cannot be reached.
    func control(_ text: String) throws(Errno) {
        switch text {
        case "offline":
            remote.setOffline(true)
            Diagnostics.note("cloud: offline (purgefs cloud offline): every remote call fails at once")
        case "online":
            remote.setOffline(false)
            let now = WallClock.nanoseconds()
            withBooks { books in
                for key in books.pending.keys { books.pending[key] = now }
                books.failures = [:]
                books.intentFailures = 0
                books.intentsDue = 0
            }
            Diagnostics.note("cloud: online again")
            kick()
        case _ where text.hasPrefix("touch "):
            let path = String(text.dropFirst("touch ".count))
            guard isUbiquitous(path) else { throw Errno.invalidArgument }
            do throws(CloudFailure) {
                try remote.touch(path, scratch: stateDirectory.descriptor)
            } catch {
                Diagnostics.note("cloud: cannot touch the remote copy of \(path): \(error)")
                throw error.errno == .noEntry ? Errno.noEntry : Errno.ioError
            }
        default:
            throw Errno.invalidArgument
        }
    }
}
