/// What one directory holds directly, for comparing the ledger with a
/// listing of the backing directory (changes made behind the mount).
extension Ledger {
    /// The entries recorded directly in directory `id`.
    public struct Children: Equatable, Sendable {
        /// Files with a name here, once per name (two names of one file here: twice).
        public var files: [EntryID] = []
        public var directories: [EntryID] = []

        public init(files: [EntryID] = [], directories: [EntryID] = []) {
            self.files = files
            self.directories = directories
        }
    }

    /// O(entries of the directory), plus O(files with several names) when
    /// any file in the ledger has more than one name.
    public func children(of id: EntryID) throws(PurgeCoreError) -> Children {
        let x = try directorySlot(id)
        var children = Children()
        var f = directories[Int(x)].firstFile
        while f != noSlot {
            children.files.append(files[Int(f)].id)
            f = files[Int(f)].next
        }
        if directories[Int(x)].fileLinks > UInt32(children.files.count) {
            for (file, places) in extraLinks {
                for place in places where place == x { children.files.append(files[Int(file)].id) }
            }
        }
        var d = directories[Int(x)].firstChild
        while d != noSlot {
            children.directories.append(directories[Int(d)].id)
            d = directories[Int(d)].nextSibling
        }
        return children
    }

    /// The directory holding directory `id` (nil for the root or an unknown one).
    public func parent(ofDirectory id: EntryID) -> EntryID? {
        guard let x = try? directorySlot(id) else { return nil }
        let p = directories[Int(x)].parent
        return p == noSlot ? nil : directories[Int(p)].id
    }

    /// Every directory in the ledger, the root first.
    public var directoryIDs: [EntryID] {
        guard rootSlot != noSlot else { return [] }
        return subtreeDirectories(rootSlot).map { directories[Int($0)].id }
    }
}
