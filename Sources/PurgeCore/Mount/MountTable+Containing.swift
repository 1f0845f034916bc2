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

extension MountTable {
    /// How a container asked to be mounted stands to one already mounted.
    public enum Overlap: Equatable, Sendable {
        /// The same container.
        case same
        /// The container asked for lies inside the mounted one.
        case inside
        /// The container asked for holds the mounted one.
        case holds
    }

    /// A purgefs mount that serves `container` (canonical) already, or a
    /// container inside it or holding it (a purgefs mount's source is its
    /// container): one daemon per container, and no container within
    /// another. The same container first, then the deepest container.
    public func purgefsMount(overlapping container: String) -> (entry: Entry, overlap: Overlap)? {
        var found: [(entry: Entry, overlap: Overlap)] = []
        for entry in entries where entry.isPurgefs {
            guard let source = AbsolutePath.normalise(entry.source) else { continue }
            if source == container {
                found.append((entry, .same))
            } else if AbsolutePath.relative(container, to: source) != nil {
                found.append((entry, .inside))
            } else if AbsolutePath.relative(source, to: container) != nil {
                found.append((entry, .holds))
            }
        }
        if let same = found.last(where: { $0.overlap == .same }) { return same }
        return found.max { $0.entry.source.count < $1.entry.source.count }
    }
}
