import Glibc
import PurgeCore
import PurgeSys

/// At mount, after the walk (which told members apart by their names, see
/// `ContainerScan`): the registry is brought in line with the disk.
extension LinkedClones {
    func reconcile(root: FileDescriptor) {
        guarded.withLock { table in
            // A snapshot of what was loaded first: the journal starts empty
            // (a line a crash cut short is never appended to).
            if store.hasStored {
                do { try store.fold(table.registry) } catch {
                    Diagnostics.note("cannot save the linked clone registry: \(error)")
                }
            }
            settleRenames(root: root, in: &table)
            finishMoves(root: root, in: &table)
            replaySparse(linkedMembers: Set(table.registry.members.keys))
            for (id, member) in table.registry.members {
                // A member the walk did not find under its name broke (its anchor
                // is there now), lost its name while unmounted, or was open
                // without a name when the daemon stopped: it is no clone any more.
                if member.name.isEmpty || !state.read({ ledger, _ in ledger.contains(id) }) {
                    forget(id, in: &table)
                } else if let anchor = try? withAnchor(id, { (file) throws(Errno) in try file.status() }) {
                    // Its anchor has another name: the clone's own, which was
                    // never linked to the group's data (stopped in the middle
                    // of `makeClone`). It is a file of its own.
                    if anchor.st_nlink > 1 {
                        Diagnostics.note("linked clone \(id): its name holds its own data, not its group's; it is forgotten")
                        forget(id, in: &table)
                    }
                } else {
                    Diagnostics.note("linked clone \(id): its anchor is missing; it is forgotten")
                    forget(id, in: &table)
                }
            }
            for group in table.registry.groups.keys { settle(group, in: &table) }
            removeStrayAnchors(in: table)
            save(&table)
        }
        chargeSparseAtMount()
    }

    /// Members a stopped daemon was renaming (`LinkedCloneRegistry.beginMove`):
    /// each takes the new name if it holds the group's data (the rename was
    /// done, as the walk found), else keeps its old one.
    private func settleRenames(root: FileDescriptor, in table: inout Table) {
        for (id, name) in table.registry.moving {
            guard let member = table.registry.members[id], let group = table.registry.groups[member.group] else { continue }
            let found = state.read({ _, names in names.components(of: name.parent) })
                .flatMap { chain in try? DirectoryNames.open(chain, from: root) }
                .flatMap { directory in
                    defer { directory.closeQuietly() }
                    return (try? directory.status(of: Self.cName(name.name))).map(EntryID.init)
                }
            if let found, found == group.backing || found == group.retiring {
                Diagnostics.note("linked clone \(id): a rename the daemon did not see finish was done; it takes its new name")
                table.registry.move(id, to: name)
            } else {
                table.registry.endMove(id)
            }
        }
    }

    /// Finishes breaks of primaries that a stopped daemon left half done.
    private func finishMoves(root: FileDescriptor, in table: inout Table) {
        for (group, record) in table.registry.groups {
            guard let old = record.retiring else { continue }
            guard let backing = try? openBacking(record) else { continue }
            defer { backing.closeQuietly() }
            for id in table.registry.members(of: group) {
                guard let member = table.registry.members[id], !member.name.isEmpty,
                      let chain = state.read({ _, names in names.components(of: member.parent) }),
                      let directory = try? DirectoryNames.open(chain, from: root)
                else { continue }
                defer { directory.closeQuietly() }
                do { try Self.relink(Self.cName(member.name), in: directory, from: old, to: backing) } catch {
                    Diagnostics.note("linked clone \(id): cannot move it to its group's new data: \(error)")
                }
            }
            // The new data's own name goes before the group is charged, as
            // the break does: left, it counted as a name of a primary.
            let newName = Self.newBackingName(replacing: old)
            if let anchors, (try? anchors.status(of: newName)).map(EntryID.init) == record.backing { try? anchors.unlink(newName) }
            table.registry.retired(group)
        }
    }

    /// Names in the anchor directory that are no member's anchor (a clone
    /// that did not get far, or a break's new data, linked at its members'
    /// names by now) are removed.
    private func removeStrayAnchors(in table: Table) {
        guard let anchors, let stream = try? DirectoryStream(anchors) else { return }
        // Bases the block maps name stay (replay unlinked the others).
        let known = Set(table.registry.members.keys.map(LinkedCloneRegistry.anchorName(of:)))
            .union(Set(sparse.maps.book.durable.values.map { SparseMembers.baseName(of: $0.map.base) }))
        var stray: [String] = []
        while let entry = try? stream.next() {
            guard !entry.isDotOrDotDot else { continue }
            let name = String(cString: entry.name)
            if !known.contains(name) { stray.append(name) }
        }
        for name in stray { try? anchors.unlink(name) }
    }
}
