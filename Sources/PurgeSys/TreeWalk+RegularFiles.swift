import Glibc

extension TreeWalk {
    /// Every regular file below the root, by its path relative to the root
    /// (components joined with `/`), in the walk's order. Symlinks, devices
    /// and the like are left out; other filesystems are not entered.
    public func regularFiles() throws(Errno) -> [(path: String, status: stat)] {
        var found: [(path: String, status: stat)] = []
        try forEachRegularFile { path, status in
            found.append((path, status))
            return true
        }
        return found
    }

    /// Calls `body` with each regular file `regularFiles()` would list, in
    /// the same order, until it returns false (the walk then looks at
    /// nothing more).
    public func forEachRegularFile(_ body: (_ path: String, _ status: stat) -> Bool) throws(Errno) {
        var going = true
        // The names of the directories above the entry being visited.
        var above: [String] = []
        try run { visit in
            above.removeLast(max(0, above.count - (visit.depth - 1)))
            guard going else { return false }
            let name = String(cString: visit.name)
            switch visit.status.st_mode & S_IFMT {
            case S_IFDIR:
                above.append(name)
                return true
            case S_IFREG:
                going = body((above + [name]).joined(separator: "/"), visit.status)
            default:
                break
            }
            return false
        }
    }
}
