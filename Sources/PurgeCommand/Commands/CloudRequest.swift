import PurgeCore
import PurgeEngines
import PurgeSys

/// What `evict` and `download` share (`EvictVerb`, `DownloadVerb`): writing `user.purgefs.evict` or
/// `user.purgefs.download` on a file inside a purgefs mount.
enum CloudRequest {
    static func request(_ attribute: PurgeAttribute, on path: String, _ access: AttributeAccess) throws(CommandExit) {
        let verb = attribute == .evict ? "evicted" : "downloaded"
        do throws(Errno) {
            try access.write(attribute.fullName, path, Array("1".utf8))
        } catch {
            switch error {
            case .busy where attribute == .evict:
                throw .failure("\(path) cannot be evicted now: \(refusal(of: path, access))")
            case .invalidArgument:
                throw .failure("\(path) cannot be \(verb): \(outsideTheTier(path, access)); "
                    + "only files in a ubiquitous zone of a mount with cloud= can")
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

    /// Why the daemon refused to evict `path`, as it says now in
    /// `user.purgefs.evictable` (the refusal and this read are two requests:
    /// what changed between them is said as such).
    static func refusal(of path: String, _ access: AttributeAccess) -> String {
        let value = (try? access.read(PurgeAttribute.evictable.fullName, path)).map { String(decoding: $0, as: UTF8.self) }
        if let value, let refusal = EvictionRefusal(rawValue: value) { return refusal.explanation }
        switch value {
        case EvictionRefusal.evictableValue?: return "it was busy a moment ago, and can be evicted now (try again)"
        case EvictionRefusal.evictedValue?: return "it was busy a moment ago, and is evicted now"
        default: return "the daemon refused it (EBUSY) and does not say why"
        }
    }

    /// Why the daemon answered `EINVAL`: the path is not a cloud document.
    static func outsideTheTier(_ path: String, _ access: AttributeAccess) -> String {
        func answers(_ attribute: PurgeAttribute) -> String? {
            (try? access.read(attribute.fullName, path)).map { String(decoding: $0, as: UTF8.self) }
        }
        switch answers(.ubiquitous) {
        case "0"?: return "it is not in a ubiquitous zone (ubiquitous=, default Documents)"
        case "1"?: return "the daemon refused it (EINVAL)"
        default:
            // Only regular files answer last_used, with or without cloud=.
            return answers(.lastUsed) == nil ? "it is not a regular file" : "the mount has no cloud= remote"
        }
    }
}
