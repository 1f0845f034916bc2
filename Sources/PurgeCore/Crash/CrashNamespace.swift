/// The names of a container as a crash state model follows them: which
/// name in which directory stands for which entry, with each entry's kind,
/// mode and (symbolic links) target. Entries are their backing identities,
/// so hard links are one entry with two names.
struct CrashNamespace: Sendable {
    struct Node: Sendable, Equatable {
        var kind: RecordedOperation.EntryKind
        var mode: UInt32
        var target: [UInt8]
    }

    struct Link: Sendable, Equatable {
        var parent: EntryID
        var name: [UInt8]
    }

    let root: EntryID
    private(set) var nodes: [EntryID: Node] = [:]
    private(set) var children: [EntryID: [[UInt8]: EntryID]] = [:]
    private(set) var links: [EntryID: [Link]] = [:]

    init(root: EntryID, mode: UInt32) {
        self.root = root
        nodes[root] = Node(kind: .directory, mode: mode, target: [])
        children[root] = [:]
    }

    func node(_ id: EntryID) -> Node? { nodes[id] }

    func entry(_ name: [UInt8], in parent: EntryID) -> EntryID? { children[parent]?[name] }

    /// `name` in `parent` now names `id` (a node of `node`'s kind, unless
    /// it is known already: a hard link).
    mutating func link(_ id: EntryID, _ node: Node, as name: [UInt8], in parent: EntryID) {
        if children[parent] == nil {
            // A directory the model never saw made (it came behind the mount): an orphan.
            children[parent] = [:]
        }
        if let old = children[parent]?[name], old != id { unlink(name, in: parent) }
        children[parent]?[name] = id
        if nodes[id] == nil { nodes[id] = node }
        if node.kind == .directory, children[id] == nil { children[id] = [:] }
        links[id, default: []].append(Link(parent: parent, name: name))
    }

    /// Removes `name` from `parent`; an entry left without names goes
    /// (its data stays with the model: an open descriptor may still write).
    mutating func unlink(_ name: [UInt8], in parent: EntryID) {
        guard let id = children[parent]?[name] else { return }
        children[parent]?[name] = nil
        links[id]?.removeAll { $0.parent == parent && $0.name == name }
        if links[id]?.isEmpty ?? true {
            links[id] = nil
            nodes[id] = nil
            children[id] = nil  // rmdir: nothing was left below

        }
    }

    mutating func move(_ name: [UInt8], in parent: EntryID, to newName: [UInt8], in newParent: EntryID) {
        guard let id = children[parent]?[name], let node = nodes[id] else { return }
        if parent == newParent && name == newName { return }
        children[parent]?[name] = nil
        links[id]?.removeAll { $0.parent == parent && $0.name == name }
        let keptChildren = children[id]
        link(id, node, as: newName, in: newParent)
        if let keptChildren { children[id] = keptChildren }
    }

    mutating func exchange(_ name: [UInt8], in parent: EntryID, with newName: [UInt8], in newParent: EntryID) {
        guard let one = children[parent]?[name], let other = children[newParent]?[newName] else { return }
        children[parent]?[name] = other
        children[newParent]?[newName] = one
        links[one] = links[one]?.map { $0.parent == parent && $0.name == name ? Link(parent: newParent, name: newName) : $0 }
        links[other] = links[other]?.map { $0.parent == newParent && $0.name == newName ? Link(parent: parent, name: name) : $0 }
    }

    /// The entry's first name as a path relative to the container ("" for
    /// the root), or nil when it has none.
    func path(of id: EntryID) -> String? {
        if id == root { return "" }
        var parts: [String] = []
        var current = id
        var guardCount = 0
        while current != root {
            guard let link = links[current]?.first, guardCount < 4096 else { return nil }
            parts.append(String(decoding: link.name, as: UTF8.self))
            current = link.parent
            guardCount += 1
        }
        return parts.reversed().joined(separator: "/")
    }

    /// `name` in `parent` as a path.
    func path(_ name: [UInt8], in parent: EntryID) -> String {
        let leaf = String(decoding: name, as: UTF8.self)
        guard let base = path(of: parent) else { return "?/" + leaf }
        return base.isEmpty ? leaf : base + "/" + leaf
    }

    /// Every name reachable from the root, parents before children, names in
    /// byte order: (path, entry).
    /// Each directory once: a log read from a directory the user names (explore
    /// --replay) may link a directory under itself, which no real tree does.
    func walk() -> [(path: String, id: EntryID)] {
        var result: [(String, EntryID)] = []
        var visited: Set<EntryID> = []
        func visit(_ directory: EntryID, _ prefix: String) {
            guard visited.insert(directory).inserted, let names = children[directory] else { return }
            for name in names.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let id = names[name]!
                let path = prefix + String(decoding: name, as: UTF8.self)
                result.append((path, id))
                if nodes[id]?.kind == .directory { visit(id, path + "/") }
            }
        }
        visit(root, "")
        return result
    }
}
