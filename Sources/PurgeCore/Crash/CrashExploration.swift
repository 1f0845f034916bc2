/// Every crash state of one recorded run (`purgefs explore`), as a
/// filesystem (`model`, `CrashFilesystemModel`; what follows is the part
/// the models share, as ext4 with `data=ordered` and delayed allocation
/// has it) could leave the container if the power went right after
/// operation k (k = 1...n, the recorded operations that changed the container):
///
/// - **Data.** Each file holds what it held at its last sync before k
///   (`fsync`, `fdatasync`, an `O_SYNC`/`O_DSYNC` write, `msync(MS_SYNC)`),
///   or what the base copy held if it was never synced; a file the run made
///   and never synced is empty. No byte written since a file's last sync
///   survives: delayed allocation gives such bytes no blocks before the
///   writeback, and an ordered journal commits the names without them (how
///   a renamed-over config file came back empty in 2009).
/// - **Names.** Name changes (create, mkdir, symlink, link, unlink, rmdir,
///   rename) go into one journal in order, and persist in that order up to
///   some point between the last one made durable and k. A directory's
///   `fsync` makes durable the journal up to that directory's last change
///   (a journal commits in order); a file's `fsync` never makes its name
///   durable (POSIX asks for the directory's).
///
/// For each k the states are both ends of the name range:
/// `names-kept` (every name change up to k persisted) and, when some are
/// not durable yet, `names-lost` (only the durable ones). Exploring every k
/// covers every k right before and right after each durable operation.
/// With `torn`, also `torn-p` for p = 1...P: names kept, and the first p of
/// the P 4 KiB pages written since their file's last sync (in the order
/// written) survive.
///
/// Pure and deterministic: the same records give the same states in the
/// same order.
public struct CrashExploration: Sendable {
    /// One entry of the container before the run (of the copy that was mounted).
    public struct InitialEntry: Sendable, Equatable {
        public var path: String
        public var id: EntryID
        public var kind: RecordedOperation.EntryKind
        public var mode: UInt32
        public var size: UInt64
        public var target: [UInt8]

        public init(path: String, id: EntryID, kind: RecordedOperation.EntryKind, mode: UInt32, size: UInt64 = 0, target: [UInt8] = []) {
            self.path = path
            self.id = id
            self.kind = kind
            self.mode = mode
            self.size = size
            self.target = target
        }
    }

    public enum Variant: Hashable, Sendable, CustomStringConvertible {
        case namesKept
        case namesLost
        case torn(pages: Int)
        /// `posix` only: names kept, and of the unsynced pages only page
        /// `page` (counted as `torn` counts them), written at k, survives.
        case reordered(page: Int)

        public var description: String {
            switch self {
            case .namesKept: return "names-kept"
            case .namesLost: return "names-lost"
            case .torn(let pages): return "torn-\(pages)"
            case .reordered(let page): return "reordered-\(page)"
            }
        }

        public init?(_ text: String) {
            switch text {
            case "names-kept": self = .namesKept
            case "names-lost": self = .namesLost
            default:
                if text.hasPrefix("torn-"), let pages = Int(text.dropFirst(5)), pages > 0 {
                    self = .torn(pages: pages)
                } else if text.hasPrefix("reordered-"), let page = Int(text.dropFirst(10)), page > 0 {
                    self = .reordered(page: page)
                } else {
                    return nil
                }
            }
        }

        /// Exploration order within a point: names-kept, names-lost, torn-1...P, reordered-N.
        var rank: (Int, Int) {
            switch self {
            case .namesKept: return (0, 0)
            case .namesLost: return (1, 0)
            case .torn(let pages): return (2, pages)
            case .reordered(let page): return (3, page)
            }
        }
    }

    /// Which state: the crash point and the variant.
    public struct StateID: Hashable, Sendable, CustomStringConvertible {
        public var point: Int
        public var variant: Variant
        public init(point: Int, variant: Variant) {
            self.point = point
            self.variant = variant
        }
        public var description: String { "\(point)/\(variant)" }

        /// `POINT/VARIANT`, or `POINT` for `names-kept`.
        public init?(_ text: String) {
            let parts = text.split(separator: "/", maxSplits: 1)
            guard let first = parts.first, let point = Int(first), point > 0 else { return nil }
            guard parts.count == 2 else {
                self.init(point: point, variant: .namesKept)
                return
            }
            guard let variant = Variant(String(parts[1])) else { return nil }
            self.init(point: point, variant: variant)
        }
    }

    /// One entry of a state, as the builder makes it.
    public struct Entry: Hashable, Sendable {
        public var path: String
        public var kind: RecordedOperation.EntryKind
        public var mode: UInt32
        /// Names of one identity are hard links of one file.
        public var identity: EntryID
        /// Regular files.
        public var image: FileImage?
        /// Symbolic links.
        public var target: [UInt8]
    }

    /// A state to build and check, with what the report says of it.
    public struct State: Sendable {
        public var id: StateID
        public var entries: [Entry]
        /// The operation at k, paths relative to the container.
        public var operation: String
        /// The last durable operation before k (its number and description).
        public var lastDurable: (point: Int, text: String)?
        /// What the state lacks compared with the moment of the crash: the
        /// first `lostLimit` items (all of them by default).
        public var lost: [String]
        /// How many items there are in all.
        public var lostCount: Int
        /// Bytes of the command's stdout printed before operation k + 1.
        public var outputLength: UInt64
    }

    /// One operation: a record, or a rename over a name (its removal and
    /// the move, recorded as two, are one operation).
    enum Operation: Sendable {
        case record(RecordedOperation)
        case replacing(RecordedOperation, replaced: EntryID)

        var record: RecordedOperation {
            switch self {
            case .record(let record), .replacing(let record, _): return record
            }
        }
    }

    let initial: [InitialEntry]
    let operations: [Operation]
    /// The filesystem whose crash behaviour the states follow.
    public let model: CrashFilesystemModel
    /// Output bytes printed before each operation (index k - 1) and in all.
    let outputBefore: [UInt64]
    public let outputTotal: UInt64
    /// The total of the data file's bytes the records name, for a check that it is whole.
    public let dataNeeded: UInt64

    public var operationCount: Int { operations.count }

    /// `initial` starts with the root (path ""). `records` as the log has them.
    public init(initial: [InitialEntry], records: [RecordedOperation], model: CrashFilesystemModel = .ext4) {
        self.initial = initial
        self.model = model
        var operations: [Operation] = []
        var before: [UInt64] = []
        var printed: UInt64 = 0
        var needed: UInt64 = 0
        var index = 0
        while index < records.count {
            let record = records[index]
            switch record {
            case .output(let data, let length):
                // Clamped: a log is read from a directory the user names (explore --replay).
                printed = printed.addingClamped(length)
                needed = max(needed, data + length)
                index += 1
                continue
            case .write(_, _, let length, let data):
                needed = max(needed, data + length)
            default: break
            }
            // A removal followed by a move onto the same name is one rename.
            // A log written before the recorder logged the two together may
            // have output between them: it was drained after rename(2)
            // returned, so it counts as printed after the rename.
            if case .removed(let parent, let name, let replaced) = record {
                var next = index + 1
                var between: [(data: UInt64, length: UInt64)] = []
                while next < records.count, case .output(let data, let length) = records[next] {
                    between.append((data, length))
                    next += 1
                }
                if next < records.count, case .moved(_, _, let newParent, let newName, _) = records[next], newParent == parent, newName == name {
                    before.append(printed)
                    operations.append(.replacing(records[next], replaced: replaced))
                    for output in between {
                        printed = printed.addingClamped(output.length)
                        needed = max(needed, output.data + output.length)
                    }
                    index = next + 1
                    continue
                }
            }
            before.append(printed)
            operations.append(.record(record))
            index += 1
        }
        self.operations = operations
        outputBefore = before
        outputTotal = printed
        dataNeeded = needed
    }

    /// Output printed before operation k + 1 began (the crash may come at any
    /// moment between k and k + 1: the state is the same).
    public func outputLength(at point: Int) -> UInt64 {
        point < outputBefore.count ? outputBefore[point] : outputTotal
    }

    /// Every state, in exploration order: k = 1...n, and for each k
    /// names-kept, names-lost (when some names are not durable), torn-1...P,
    /// and under `posix` reordered-N for each page N written at k that has
    /// unsynced pages before it.
    public func stateIDs(torn: Bool) -> [StateID] {
        sizedStateIDs(torn: torn).map(\.id)
    }

    /// `stateIDs(torn:)` with the number of entries of each state: the work
    /// of building it, which grows along a run that makes files (what the
    /// time left is estimated from).
    public func sizedStateIDs(torn: Bool) -> [(id: StateID, entries: Int)] {
        var ids: [(id: StateID, entries: Int)] = []
        var simulation = Simulation(initial: initial, model: model)
        for (index, operation) in operations.enumerated() {
            let pagesBefore = simulation.tornPages.count
            simulation.apply(operation, point: index + 1)
            let point = index + 1
            let entries = simulation.current.nodes.count
            ids.append((StateID(point: point, variant: .namesKept), entries))
            if simulation.hasUndurableNames { ids.append((StateID(point: point, variant: .namesLost), simulation.durableNames.nodes.count)) }
            let pages = simulation.tornPages.count
            if torn, pages > 0 {
                for count in 1...pages { ids.append((StateID(point: point, variant: .torn(pages: count)), entries)) }
            }
            if model.reorders, case .write = operation.record, pages > max(pagesBefore, 1) {
                for page in (max(pagesBefore, 1) + 1)...pages { ids.append((StateID(point: point, variant: .reordered(page: page)), entries)) }
            }
        }
        return ids
    }

    /// A state with each model under which it can happen.
    public typealias Labelled = (state: State, models: [CrashFilesystemModel])

    /// The states of `ids` in exploration order with each model under
    /// which it can happen: `explorations` are one recorded run under
    /// several models, and a state two of them leave identical (the same
    /// point, variant, tree and output) is listed once, labelled with both.
    public static func labelled(_ explorations: [CrashExploration], ids: [StateID]) -> [Labelled] {
        Array(IteratorSequence(labelledIterator(explorations, ids: ids)))
    }

    /// `labelled(_:ids:)` made one id at a time as they are asked for: each
    /// model's simulation goes forward point by point, and only the states
    /// of one id (one a model at most) are held at a time.
    public static func labelledIterator(_ explorations: [CrashExploration], ids: [StateID], lostLimit: Int = .max) -> LabelledIterator {
        LabelledIterator(ids: ids, models: explorations.map { $0.stateIterator([], lostLimit: lostLimit) })
    }

    public struct LabelledIterator: IteratorProtocol {
        let ids: [StateID]
        var models: [StateIterator]
        var index = 0
        /// The states of `ids[index - 1]` not returned yet.
        var pending: [Labelled] = []
        var returned = 0

        /// The states returned, those of the id being returned, and one for
        /// each id not reached yet: the number of states, once all are made.
        public var expected: Int { returned + pending.count + (ids.count - index) }

        /// The index in `ids` of the state `next()` returned last.
        public var position: Int { index - 1 }

        /// The id of the state `next()` returns, if it makes one.
        public var upcoming: StateID? { pending.first?.state.id ?? (index < ids.count ? ids[index] : nil) }

        public mutating func next() -> Labelled? {
            while pending.isEmpty, index < ids.count {
                let id = ids[index]
                index += 1
                struct Key: Hashable {
                    var entries: [Entry]
                    var output: UInt64
                }
                var found: [Key: Int] = [:]
                for position in models.indices {
                    guard let state = models[position].state(id) else { continue }
                    let key = Key(entries: state.entries, output: state.outputLength)
                    if let existing = found[key] {
                        pending[existing].models.append(models[position].exploration.model)
                    } else {
                        found[key] = pending.count
                        pending.append((state, [models[position].exploration.model]))
                    }
                }
            }
            guard !pending.isEmpty else { return nil }
            returned += 1
            return pending.removeFirst()
        }
    }

    /// The ids of every model's states, each once, in exploration order.
    public static func unionIDs(_ explorations: [CrashExploration], torn: Bool) -> [StateID] {
        sizedUnionIDs(explorations, torn: torn).map(\.id)
    }

    /// `unionIDs` with the entries of each state (under the first model that has it).
    public static func sizedUnionIDs(_ explorations: [CrashExploration], torn: Bool) -> [(id: StateID, entries: Int)] {
        var seen: Set<StateID> = []
        var ids: [(id: StateID, entries: Int)] = []
        for exploration in explorations {
            for sized in exploration.sizedStateIDs(torn: torn) where seen.insert(sized.id).inserted { ids.append(sized) }
        }
        guard explorations.count > 1 else { return ids }
        return ids.sorted { ($0.id.point, $0.id.variant.rank.0, $0.id.variant.rank.1) < ($1.id.point, $1.id.variant.rank.0, $1.id.variant.rank.1) }
    }

    /// `limit` of `ids`, evenly spaced, the first and the last among them.
    public static func sample(_ ids: [StateID], limit: Int) -> [StateID] {
        guard limit > 0, ids.count > limit else { return limit > 0 ? ids : [] }
        guard limit > 1 else { return [ids[0]] }
        return (0..<limit).map { ids[($0 * (ids.count - 1) + (limit - 1) / 2) / (limit - 1)] }
    }

    /// The states `ids` names (in exploration order; others are skipped).
    public func states(_ ids: [StateID]) -> [State] {
        Array(IteratorSequence(stateIterator(ids)))
    }

    /// The states `ids` names, made one at a time as they are asked for: the
    /// memory of one state at a time, however many there are. `ids` in
    /// exploration order costs one pass over the operations (an id before
    /// the one made last starts the pass again); ids of no state are skipped.
    /// Each state's `lost` holds at most `lostLimit` items (`lostCount` all).
    public func stateIterator(_ ids: [StateID], lostLimit: Int = .max) -> StateIterator {
        StateIterator(exploration: self, ids: ids, lostLimit: lostLimit, simulation: Simulation(initial: initial, model: model))
    }

    public struct StateIterator: IteratorProtocol {
        let exploration: CrashExploration
        let ids: [StateID]
        let lostLimit: Int
        var simulation: Simulation
        var index = 0
        /// Operations applied to `simulation`.
        var applied = 0

        public mutating func next() -> State? {
            while index < ids.count {
                let id = ids[index]
                index += 1
                if let state = state(id) { return state }
            }
            return nil
        }

        /// The state `id` names (nil if there is none), the simulation taken
        /// forward to its point (or again from the start, for an earlier one).
        mutating func state(_ id: StateID) -> State? {
            guard id.point >= 1, id.point <= exploration.operationCount else { return nil }
            if id.point < applied {
                simulation = Simulation(initial: exploration.initial, model: exploration.model)
                applied = 0
            }
            while applied < id.point {
                simulation.apply(exploration.operations[applied], point: applied + 1)
                applied += 1
            }
            return simulation.state(id, outputLength: exploration.outputLength(at: applied), lostLimit: lostLimit)
        }
    }
}

extension CrashExploration {
    /// The sequential model: the namespace now and as durable, each file's
    /// content now and as durable, what is unsynced.
    struct Simulation {
        /// A name change or a size change, in the one journal.
        struct Journaled {
            var point: Int
            var operation: Operation
            var directories: [EntryID]
            /// The files whose `fsync` commits it (their names or size).
            var entries: [EntryID]
            var lostText: [String]
            /// `ext4`'s rename over a name: the file's data then, written before the rename commits.
            var flush: Flush?
        }

        struct Flush {
            var id: EntryID
            var image: FileImage
            /// Its unsynced ranges and the last page serial then.
            var ranges: Int
            var serial: Int
        }

        let model: CrashFilesystemModel

        var current: CrashNamespace
        var durableNames: CrashNamespace
        var journal: [Journaled] = []
        /// Journal entries made durable (a prefix), and applied to `durableNames`.
        var committed = 0
        var contents: [EntryID: FileImage] = [:]
        var durable: [EntryID: FileImage] = [:]
        /// Per file: ranges written and whether the size changed since its last sync.
        var unsyncedRanges: [EntryID: [Range<UInt64>]] = [:]
        var unsyncedSize: [EntryID: Bool] = [:]
        /// Writes since their file's last sync, in order, as 4 KiB pages,
        /// each with a serial number (growing, never reused).
        var tornPages: [(id: EntryID, piece: FileImage.Piece, serial: Int)] = []
        var pageSerial = 0
        /// Per file: pages up to this serial are in `durable` (a flush committed).
        var flushedThrough: [EntryID: Int] = [:]
        /// Per file: the point of its last sync.
        var syncedAt: [EntryID: Int] = [:]
        var descriptions: [String] = []
        var lastDurable: (point: Int, text: String)?
        var previousDurable: (point: Int, text: String)?
        /// Backing inode numbers are reused: an identity made again after
        /// its last name went is another file here (a generation of its own).
        var aliases: [EntryID: EntryID] = [:]
        var generations: [EntryID: UInt64] = [:]
        var seen: Set<EntryID> = []

        init(initial: [InitialEntry], model: CrashFilesystemModel) {
            self.model = model
            let root = initial.first { $0.path.isEmpty }
            var names = CrashNamespace(root: root?.id ?? EntryID(device: 0, inode: 0), mode: root?.mode ?? 0o755)
            var byPath: [String: EntryID] = ["": names.root]
            for entry in initial where !entry.path.isEmpty {
                let slash = entry.path.lastIndex(of: "/")
                let parentPath = slash.map { String(entry.path[..<$0]) } ?? ""
                let leaf = slash.map { String(entry.path[entry.path.index(after: $0)...]) } ?? entry.path
                guard let parent = byPath[parentPath] else { continue }
                names.link(entry.id, CrashNamespace.Node(kind: entry.kind, mode: entry.mode, target: entry.target),
                           as: Array(leaf.utf8), in: parent)
                byPath[entry.path] = entry.id
                seen.insert(entry.id)
                if entry.kind == .file, contents[entry.id] == nil {
                    contents[entry.id] = .base(entry.path, size: entry.size)
                    durable[entry.id] = contents[entry.id]
                }
            }
            current = names
            durableNames = names
        }

        var hasUndurableNames: Bool { committed < journal.count }

        func path(_ id: EntryID) -> String {
            current.path(of: id) ?? "(unlinked file \(id.inode))"
        }

        static func range(_ offset: UInt64, _ length: UInt64) -> String {
            "bytes \(offset)-\(offset + (max(length, 1) - 1))"
        }

        func alias(_ id: EntryID) -> EntryID { aliases[id] ?? id }

        /// The operation with each recorded identity as the model knows it;
        /// a creation of an identity seen before and nameless now starts a new generation.
        mutating func translated(_ operation: Operation) -> Operation {
            if case .created(_, _, let entry, _, _, _) = operation.record, seen.contains(entry), current.node(alias(entry)) == nil {
                let generation = (generations[entry] ?? 0) + 1
                generations[entry] = generation
                aliases[entry] = EntryID(device: entry.device &+ (generation << 40), inode: entry.inode)
            }
            for id in Self.identities(operation.record) { seen.insert(id) }
            let record: RecordedOperation
            switch operation.record {
            case .write(let id, let offset, let length, let data): record = .write(alias(id), offset: offset, length: length, data: data)
            case .resize(let id, let size): record = .resize(alias(id), size: size)
            case .created(let parent, let name, let entry, let kind, let mode, let target):
                record = .created(parent: alias(parent), name: name, entry: alias(entry), kind: kind, mode: mode, target: target)
            case .removed(let parent, let name, let entry): record = .removed(parent: alias(parent), name: name, entry: alias(entry))
            case .moved(let parent, let name, let newParent, let newName, let entry):
                record = .moved(parent: alias(parent), name: name, newParent: alias(newParent), newName: newName, entry: alias(entry))
            case .exchanged(let parent, let name, let newParent, let newName):
                record = .exchanged(parent: alias(parent), name: name, newParent: alias(newParent), newName: newName)
            case .synced(let id): record = .synced(alias(id))
            case .directorySynced(let id): record = .directorySynced(alias(id))
            case .output: record = operation.record
            }
            switch operation {
            case .record: return .record(record)
            case .replacing(_, let replaced): return .replacing(record, replaced: alias(replaced))
            }
        }

        static func identities(_ record: RecordedOperation) -> [EntryID] {
            switch record {
            case .write(let id, _, _, _), .resize(let id, _), .synced(let id), .directorySynced(let id): return [id]
            case .created(let parent, _, let entry, _, _, _), .removed(let parent, _, let entry): return [parent, entry]
            case .moved(let parent, _, let newParent, _, let entry): return [parent, newParent, entry]
            case .exchanged(let parent, _, let newParent, _): return [parent, newParent]
            case .output: return []
            }
        }

        mutating func apply(_ recorded: Operation, point: Int) {
            let operation = translated(recorded)
            previousDurable = lastDurable
            let text: String
            switch operation.record {
            case .write(let id, let offset, let length, let data):
                text = "write \(path(id)): " + Self.range(offset, length)
                let piece = FileImage.Piece(offset: offset, length: length, data: data)
                contents[id, default: .empty].write(piece)
                if length > 0 { unsyncedRanges[id, default: []].append(offset..<(offset + length)) }
                for page in FileImage.pages(of: piece) {
                    pageSerial += 1
                    tornPages.append((id, page, pageSerial))
                }
            case .resize(let id, let size):
                // A size change is metadata: journaled in order with the names.
                text = "truncate \(path(id)) to \(size)"
                contents[id, default: .empty].resize(to: size)
                unsyncedSize[id] = true
                journal.append(Journaled(point: point, operation: operation, directories: [], entries: [id], lostText: [text]))
            case .synced(let id):
                text = "fsync \(path(id))"
                durable[id] = contents[id] ?? .empty
                unsyncedRanges[id] = nil
                unsyncedSize[id] = nil
                tornPages.removeAll { $0.id == id }
                syncedAt[id] = point
                // Every model but posix: the fsync commits the journal up to
                // the file's own last name or size change.
                if model.syncCommitsNames, let last = journal.lastIndex(where: { $0.entries.contains(id) }) {
                    commit(upTo: last + 1)
                }
            case .directorySynced(let id):
                let shown = current.path(of: id) ?? "?"
                text = "fsync directory \(shown.isEmpty ? "." : shown)"
                if let last = journal.lastIndex(where: { $0.directories.contains(id) }) {
                    commit(upTo: last + 1)
                }
            case .created, .removed, .moved, .exchanged:
                text = journalName(operation, point: point)
            case .output:
                text = "output"
            }
            descriptions.append(text)
            switch operation.record {
            case .synced, .directorySynced: lastDurable = (point, text)
            default: break
            }
        }

        mutating func commit(upTo count: Int) {
            guard count > committed else { return }
            for entry in journal[committed..<count] {
                Self.applyNames(entry.operation, to: &durableNames)
                if case .resize(let id, let size) = entry.operation.record, (syncedAt[id] ?? 0) < entry.point {
                    durable[id, default: .empty].resize(to: size)
                }
                if let flush = entry.flush, (syncedAt[flush.id] ?? 0) < entry.point {
                    durable[flush.id] = flush.image
                    if let ranges = unsyncedRanges[flush.id] { unsyncedRanges[flush.id] = Array(ranges.dropFirst(flush.ranges)) }
                    flushedThrough[flush.id] = flush.serial
                }
            }
            committed = count
        }

        /// Applies a name change to `current` and journals it; returns its description.
        mutating func journalName(_ operation: Operation, point: Int) -> String {
            let text: String
            var lost: [String]
            var directories: [EntryID]
            var entries: [EntryID] = []
            var flush: Flush?
            switch operation.record {
            case .created(let parent, let name, let entry, let kind, _, let target):
                let place = current.path(name, in: parent)
                let existing = current.node(entry) != nil
                switch kind {
                case .directory: text = "mkdir \(place)"
                case .symbolicLink: text = "symlink \(place) -> \(String(decoding: target, as: UTF8.self))"
                case .file where existing: text = "link \(place) to \(path(entry))"
                case .file: text = "create \(place)"
                case .other: text = "mknod \(place)"
                }
                lost = ["name \(place)"]
                directories = [parent]
                entries = [entry]
                if kind == .file, !existing { contents[entry] = .empty }
            case .removed(let parent, let name, let entry):
                let place = current.path(name, in: parent)
                text = (current.node(entry)?.kind == .directory ? "rmdir " : "unlink ") + place
                lost = ["removal of \(place)"]
                directories = [parent]
                entries = [entry]
            case .moved(let parent, let name, let newParent, let newName, let entry):
                let from = current.path(name, in: parent), to = current.path(newName, in: newParent)
                text = "rename \(from) -> \(to)"
                lost = ["rename \(from) -> \(to)"]
                directories = [parent, newParent]
                entries = [entry]
                if case .replacing(_, let replaced) = operation {
                    entries.append(replaced)
                    // ext4's auto_da_alloc: a file renamed over an existing
                    // name has its data written before the rename commits.
                    if model.flushesOnRenameOver, current.node(entry)?.kind == .file {
                        flush = Flush(id: entry, image: contents[entry] ?? .empty, ranges: unsyncedRanges[entry]?.count ?? 0, serial: pageSerial)
                    }
                }
            case .exchanged(let parent, let name, let newParent, let newName):
                let one = current.path(name, in: parent), other = current.path(newName, in: newParent)
                text = "exchange \(one) <-> \(other)"
                lost = [text]
                directories = [parent, newParent]
            default:
                return ""
            }
            Self.applyNames(operation, to: &current)
            journal.append(Journaled(point: point, operation: operation, directories: directories, entries: entries, lostText: lost, flush: flush))
            return text
        }

        static func applyNames(_ operation: Operation, to names: inout CrashNamespace) {
            switch operation.record {
            case .created(let parent, let name, let entry, let kind, let mode, let target):
                names.link(entry, CrashNamespace.Node(kind: kind, mode: mode, target: target), as: name, in: parent)
            case .removed(let parent, let name, _):
                names.unlink(name, in: parent)
            case .moved(let parent, let name, let newParent, let newName, _):
                names.move(name, in: parent, to: newName, in: newParent)
            case .exchanged(let parent, let name, let newParent, let newName):
                names.exchange(name, in: parent, with: newName, in: newParent)
            default: break
            }
        }

        /// What the files lost: per file with unsynced changes, its ranges
        /// (merged, within its size at the crash) or its size. `walk`: `current.walk()`.
        func lostData(into lost: inout Lost, walk: [(path: String, id: EntryID)]) {
            for (path, id) in walk where current.node(id)?.kind == .file {
                let size = contents[id]?.size ?? 0
                let durableSize = durable[id]?.size ?? 0
                let written = unsyncedRanges[id] ?? []
                guard durableSize != size || written.contains(where: { !$0.clamped(to: 0..<size).isEmpty }) else { continue }
                lost.add {
                    var parts: [String] = []
                    let ranges = Self.merged(written.map { $0.clamped(to: 0..<size) }.filter { !$0.isEmpty })
                    if !ranges.isEmpty { parts.append(ranges.map { Self.range($0.lowerBound, $0.upperBound - $0.lowerBound) }.joined(separator: ", ")) }
                    if durableSize != size, ranges.isEmpty || unsyncedSize[id] == true {
                        parts.append("size \(size) (\(durableSize) after the crash)")
                    }
                    return "\(path): " + parts.joined(separator: "; ")
                }
            }
        }

        /// A state's lost items: the first `limit` written out, all counted.
        struct Lost {
            let limit: Int
            var items: [String] = []
            var count = 0

            mutating func add(_ item: () -> String) {
                if count < limit { items.append(item()) }
                count += 1
            }
        }

        static func merged(_ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
            var result: [Range<UInt64>] = []
            for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if let last = result.last, range.lowerBound <= last.upperBound {
                    result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
                } else {
                    result.append(range)
                }
            }
            return result
        }

        func state(_ id: StateID, outputLength: UInt64, lostLimit: Int = .max) -> State? {
            // Every variant but names-lost has the whole journal committed.
            var kept = self
            if id.variant != .namesLost { kept.commit(upTo: journal.count) }
            let names: CrashNamespace
            var images = kept.durable
            var lost = Lost(limit: lostLimit)
            let now = current.walk()
            let walk: [(path: String, id: EntryID)]
            func unflushed(_ page: (id: EntryID, piece: FileImage.Piece, serial: Int)) -> Bool {
                page.serial > (kept.flushedThrough[page.id] ?? 0)
            }
            switch id.variant {
            case .namesKept:
                names = current
                walk = now
                kept.lostData(into: &lost, walk: now)
            case .namesLost:
                guard hasUndurableNames else { return nil }
                names = durableNames
                walk = names.walk()
                for entry in journal[committed...] {
                    for text in entry.lostText { lost.add { text } }
                }
                lostData(into: &lost, walk: now)
            case .torn(let count):
                guard count >= 1, count <= tornPages.count else { return nil }
                names = current
                walk = now
                for page in tornPages[..<count] where unflushed(page) { images[page.id, default: .empty].write(page.piece) }
                kept.lostData(into: &lost, walk: now)
                let last = tornPages[count - 1]
                let after = tornPages.count - count
                lost.add {
                    "(survived: the first \(count) of \(tornPages.count) unsynced pages, the last of them "
                        + "\(path(last.id)) " + Self.range(last.piece.offset, last.piece.length)
                        + (after == 0 ? ")" : "; lost: the \(after) after it)")
                }
            case .reordered(let number):
                guard model.reorders, number >= 1, number <= tornPages.count else { return nil }
                let page = tornPages[number - 1]
                names = current
                walk = now
                images[page.id, default: .empty].write(page.piece)
                kept.lostData(into: &lost, walk: now)
                lost.add { "(only unsynced page \(number) of \(tornPages.count) survived: \(path(page.id)) " + Self.range(page.piece.offset, page.piece.length) + ")" }
            }
            var entries: [Entry] = []
            for (path, entryID) in walk {
                guard let node = names.node(entryID) else { continue }
                entries.append(Entry(path: path, kind: node.kind, mode: node.mode, identity: entryID,
                                     image: node.kind == .file ? (images[entryID] ?? .empty) : nil, target: node.target))
            }
            let operationText = descriptions.last ?? ""
            let before = id.point == (lastDurable?.point ?? -1) ? previousDurable : lastDurable
            return State(id: id, entries: entries, operation: operationText, lastDurable: before, lost: lost.items, lostCount: lost.count,
                         outputLength: outputLength)
        }
    }
}
