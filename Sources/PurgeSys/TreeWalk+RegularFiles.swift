import Glibc

extension TreeWalk {
    /// Every regular file below the root, by its path relative to the root
    /// (components joined with `/`), in the walk's order. Symlinks, devices
    /// and the like are left out; other filesystems are not entered.
    public func regularFiles() throws(Errno) -> [(path: String, status: stat)] {
        var found: [(path: String, status: stat)] = []
        // The names of the directories above the entry being visited.
        var above: [String] = []
        try run { visit in
            above.removeLast(max(0, above.count - (visit.depth - 1)))
            let name = String(cString: visit.name)
            switch visit.status.st_mode & S_IFMT {
            case S_IFDIR:
                above.append(name)
                return true
            case S_IFREG:
                found.append(((above + [name]).joined(separator: "/"), visit.status))
            default:
                break
            }
            return false
        }
        return found
    }
}
