import PurgeCore
import PurgeSys

/// What `evict` and `download` share: writing `user.purgefs.evict` or
/// `user.purgefs.download` on a file inside a purgefs mount.
enum CloudRequest {
    static func help(evict: Bool) -> String {
        let verb = evict ? "evict" : "download"
        let description = evict
            ? "Drops the local data of PATH, a file in a ubiquitous zone (Documents by default) of a purgefs "
                + "mount with cloud=DIR, once it is uploaded: it stays listed with its size, mode and times, "
                + "its allocated bytes become 0 and opening it downloads it again. Refused while the file is "
                + "open or not uploaded (or changed since). Sets user.purgefs.evict to 1, like "
                + "setfattr -n user.purgefs.evict -v 1 PATH."
            : "Starts downloading PATH, an evicted file in a ubiquitous zone of a purgefs mount with "
                + "cloud=DIR, in the background; user.purgefs.download_status becomes current when it is done. "
                + "Sets user.purgefs.download to 1, like setfattr -n user.purgefs.download -v 1 PATH."
        return PathInMount.help(command: verb, description: description)
    }

    static func request(_ attribute: PurgeAttribute, on path: String, _ access: AttributeAccess) throws(CommandExit) {
        let verb = attribute == .evict ? "evicted" : "downloaded"
        do throws(Errno) {
            try access.write(attribute.fullName, path, Array("1".utf8))
        } catch {
            switch error {
            case .busy:
                throw .failure("\(path) cannot be evicted now: it is open, or not uploaded yet (or changed since)")
            case .invalidArgument:
                throw .failure("\(path) cannot be \(verb): only files in a ubiquitous zone of a mount with cloud= can")
            case .notConnected:
                throw .failure("\(path): the purgefs daemon is not answering (did it die? purgefs unmount the mount)")
            default:
                throw .failure("\(path) cannot be \(verb): \(error)")
            }
        }
        print(attribute == .evict
              ? "Evicted \(path): its data is in the cloud only; opening it downloads it."
              : "Downloading \(path) in the background.")
    }
}
