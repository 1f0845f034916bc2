/// Every crash state of one recorded run (`purgefs explore`), as ext4 with
/// `data=ordered` and delayed allocation could leave the container if the
/// power went right after operation k (k = 1...n, the recorded operations
/// that changed the container):
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

        public var description: String {
            switch self {
            case .namesKept: return "names-kept"
            case .namesLost: return "names-lost"
            case .torn(let pages): return "torn-\(pages)"
            }
        }

        public init?(_ text: String) {
            switch text {
            case "names-kept": self = .namesKept
            case "names-lost": self = .namesLost
            default:
                guard text.hasPrefix("torn-"), let pages = Int(text.dropFirst(5)), pages > 0 else { return nil }
                self = .torn(pages: pages)
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
        /// What the state lacks compared with the moment of the crash.
        public var lost: [String]
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
    /// Output bytes printed before each operation (index k - 1) and in all.
    let outputBefore: [UInt64]
    public let outputTotal: UInt64
    /// The total of the data file's bytes the records name, for a check that it is whole.
    public let dataNeeded: UInt64

    public var operationCount: Int { operations.count }

    /// `initial` starts with the root (path ""). `records` as the log has them.
    public init(initial: [InitialEntry], records: [RecordedOperation]) {
        self.initial = initial
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
    /// names-kept, names-lost (when some names are not durable), torn-1...P.
    public func stateIDs(torn: Bool) -> [StateID] {
        var ids: [StateID] = []
        var simulation = Simulation(initial: initial)
        for (index, operation) in operations.enumerated() {
            simulation.apply(operation, point: index + 1)
            let point = index + 1
            ids.append(StateID(point: point, variant: .namesKept))
            if simulation.hasUndurableNames { ids.append(StateID(point: point, variant: .namesLost)) }
            if torn {
                let pages = simulation.tornPages.count
                if pages > 0 { for count in 1...pages { ids.append(StateID(point: point, variant: .torn(pages: count))) } }
            }
        }
        return ids
    }

    /// `limit` of `ids`, evenly spaced, the first and the last among them.
    public static func sample(_ ids: [StateID], limit: Int) -> [StateID] {
        guard limit > 0, ids.count > limit else { return limit > 0 ? ids : [] }
        guard limit > 1 else { return [ids[0]] }
        return (0..<limit).map { ids[($0 * (ids.count - 1) + (limit - 1) / 2) / (limit - 1)] }
    }

    /// The states `ids` names (in exploration order; others are skipped).
    public func states(_ ids: [StateID]) -> [State] {
        let wanted = Set(ids)
        var byPoint: [Int: [StateID]] = [:]
        for id in ids { byPoint[id.point, default: []].append(id) }
        var result: [StateID: State] = [:]
        var simulation = Simulation(initial: initial)
        let last = ids.map(\.point).max() ?? 0
        for (index, operation) in operations.enumerated() where index < last {
            let point = index + 1
            simulation.apply(operation, point: point)
            for id in byPoint[point] ?? [] where wanted.contains(id) {
                if let state = simulation.state(id, outputLength: outputLength(at: point)) { result[id] = state }
            }
        }
        return ids.compactMap { result[$0] }
    }
}

extension CrashExploration {
    /// The sequential model: the namespace now and as durable, each file's
    /// content now and as durable, what is unsynced.
    struct Simulation {
        struct Journaled {
            var point: Int
            var operation: Operation
            var directories: [EntryID]
            var lostText: [String]
        }

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
        /// Writes since their file's last sync, in order, as 4 KiB pages.
        var tornPages: [(id: EntryID, piece: FileImage.Piece)] = []
        var descriptions: [String] = []
        var lastDurable: (point: Int, text: String)?
        var previousDurable: (point: Int, text: String)?
        /// Backing inode numbers are reused: an identity made again after
        /// its last name went is another file here (a generation of its own).
        var aliases: [EntryID: EntryID] = [:]
        var generations: [EntryID: UInt64] = [:]
        var seen: Set<EntryID> = []

        init(initial: [InitialEntry]) {
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
                tornPages += FileImage.pages(of: piece).map { (id, $0) }
            case .resize(let id, let size):
                text = "truncate \(path(id)) to \(size)"
                contents[id, default: .empty].resize(to: size)
                unsyncedSize[id] = true
            case .synced(let id):
                text = "fsync \(path(id))"
                durable[id] = contents[id] ?? .empty
                unsyncedRanges[id] = nil
                unsyncedSize[id] = nil
                tornPages.removeAll { $0.id == id }
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
            for entry in journal[committed..<count] { Self.applyNames(entry.operation, to: &durableNames) }
            committed = count
        }

        /// Applies a name change to `current` and journals it; returns its description.
        mutating func journalName(_ operation: Operation, point: Int) -> String {
            let text: String
            var lost: [String]
            var directories: [EntryID]
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
                if kind == .file, !existing { contents[entry] = .empty }
            case .removed(let parent, let name, let entry):
                let place = current.path(name, in: parent)
                text = (current.node(entry)?.kind == .directory ? "rmdir " : "unlink ") + place
                lost = ["removal of \(place)"]
                directories = [parent]
            case .moved(let parent, let name, let newParent, let newName, _):
                let from = current.path(name, in: parent), to = current.path(newName, in: newParent)
                text = "rename \(from) -> \(to)"
                lost = ["rename \(from) -> \(to)"]
                directories = [parent, newParent]
            case .exchanged(let parent, let name, let newParent, let newName):
                let one = current.path(name, in: parent), other = current.path(newName, in: newParent)
                text = "exchange \(one) <-> \(other)"
                lost = [text]
                directories = [parent, newParent]
            default:
                return ""
            }
            Self.applyNames(operation, to: &current)
            journal.append(Journaled(point: point, operation: operation, directories: directories, lostText: lost))
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
        /// (merged, within its size at the crash) or its size.
        func lostData() -> [String] {
            var lines: [String] = []
            for (path, id) in current.walk() where current.node(id)?.kind == .file {
                let size = contents[id]?.size ?? 0
                let durableSize = durable[id]?.size ?? 0
                var parts: [String] = []
                let ranges = Self.merged((unsyncedRanges[id] ?? []).map { $0.clamped(to: 0..<size) }.filter { !$0.isEmpty })
                if !ranges.isEmpty { parts.append(ranges.map { Self.range($0.lowerBound, $0.upperBound - $0.lowerBound) }.joined(separator: ", ")) }
                if durableSize != size, ranges.isEmpty || unsyncedSize[id] == true {
                    parts.append("size \(size) (\(durableSize) after the crash)")
                }
                if !parts.isEmpty { lines.append("\(path): " + parts.joined(separator: "; ")) }
            }
            return lines
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

        func state(_ id: StateID, outputLength: UInt64) -> State? {
            let names: CrashNamespace
            var images = durable
            var lost = lostData()
            switch id.variant {
            case .namesKept:
                names = current
            case .namesLost:
                guard hasUndurableNames else { return nil }
                names = durableNames
                lost = journal[committed...].flatMap(\.lostText) + lost
            case .torn(let count):
                guard count >= 1, count <= tornPages.count else { return nil }
                names = current
                for page in tornPages[..<count] { images[page.id, default: .empty].write(page.piece) }
                let survived = tornPages[..<count]
                lost = lost.map { $0 } + ["(\(survived.count) of \(tornPages.count) unsynced pages survived)"]
            }
            var entries: [Entry] = []
            for (path, entryID) in names.walk() {
                guard let node = names.node(entryID) else { continue }
                entries.append(Entry(path: path, kind: node.kind, mode: node.mode, identity: entryID,
                                     image: node.kind == .file ? (images[entryID] ?? .empty) : nil, target: node.target))
            }
            let operationText = descriptions.last ?? ""
            let before = id.point == (lastDurable?.point ?? -1) ? previousDurable : lastDurable
            return State(id: id, entries: entries, operation: operationText, lastDurable: before, lost: lost, outputLength: outputLength)
        }
    }
}
