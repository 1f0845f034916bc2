extension MountTable {
    /// The mount a path lives on: of the mounts at `path` or above it, the
    /// one with the deepest mount point, the topmost when several are
    /// stacked there. `path` must be canonical. A path inside a purgefs
    /// mount but on another filesystem mounted below it is on that other one.
    public func mount(containing path: String) -> Entry? {
        var best: Entry?
        for entry in entries where AbsolutePath.relative(path, to: entry.mountPoint) != nil {
            if let current = best, current.mountPoint.count > entry.mountPoint.count { continue }
            best = entry
        }
        return best
    }
}
