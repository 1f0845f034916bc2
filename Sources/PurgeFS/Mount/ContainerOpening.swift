import Glibc
import PurgeCore
import PurgeSys

/// Everything read from the state directory and the container before
/// mounting: the counters, flags and purge order of earlier mounts, the
/// zones, and the ledger built by a walk of the container.
struct ContainerOpening {
    let directory: StateDirectory
    let state: ContainerState
    /// How this mount makes clones, chosen by its probe.
    let clones: any CloneBackend
    let purgeLog: PurgeLog
    let recency: RecencyStore

    init(prepared: MountPreparation, options: MountOptions, container: String) throws(MountError) {
        directory = StateDirectory(descriptor: prepared.state)
        recency = RecencyStore(directory: directory)
        let counters = Self.load(PurgeCounters.fileName, from: directory, PurgeCounters.init(decoding:)) ?? PurgeCounters()
        let flags = Self.load(StoredFlags.fileName, from: directory, StoredFlags.init(decoding:)) ?? StoredFlags()
        do {
            purgeLog = PurgeLog(file: try directory.openForAppending(PurgeLog.fileName))
        } catch {
            throw MountError("cannot open the purge log in the state directory: \(error)")
        }

        var zones = ZoneSet(paths: options.purgeableZones)
        for problem in zones.resolve(from: prepared.root) { Self.say(problem) }

        let linkedCloneStore = RegistryStore<LinkedCloneRegistry>(directory: directory, named: LinkedCloneRegistry.fileName)
        let linkedClones = linkedCloneStore.load()
        let showProgress = FileDescriptor.standardError.isTerminal
        var leftovers = CloneLeftovers()
        var scan = ContainerScan(
            root: prepared.root, hidden: prepared.hidden, zones: Set(zones.directories.values), flags: flags,
            recency: recency.load(), linkedClones: linkedClones)
        scan.progress = { count in
            if showProgress { Self.say("indexing \(container): \(count) entries", ending: "\r") }
        }
        scan.foundCloneLeftover = { name, parent in leftovers.note(name, in: parent) }
        let clock = RecencyClock(time: { WallClock.nanoseconds() })
        let ledger: Ledger
        let names: DirectoryNames
        do {
            (ledger, names) = try scan.run(clock: clock)
        } catch {
            throw MountError("cannot index container \(container): \(error)")
        }
        leftovers.remove(from: prepared.root, names: names)
        if showProgress { Self.say("indexing \(container): done, \(ledger.linkedFileCount) files") }
        // Flags of entries the walk did not find are gone with them, and so
        // are those of an earlier inode whose number a new one was given.
        var liveFlags = flags
        for id in flags.entries.keys where !ledger.contains(id) { liveFlags.remove(id) }
        for id in scan.staleFlags { liveFlags.remove(id) }
        state = ContainerState(
            ledger: ledger, names: names, model: CapacityModel(options: options), counters: counters, flags: liveFlags,
            zones: zones, backing: prepared.root, stateDirectory: directory)
        if liveFlags != flags { state.withBooks { $0.flagsChanged = true } }
        state.saveFlagsIfChanged()
        // Maps that cannot be read are refused: their members would read holes where they share.
        let blockMaps: BlockMaps
        do {
            blockMaps = try BlockMaps(directory: directory)
        } catch {
            throw MountError("the block maps in the state directory are malformed (\(BlockMapBook.fileName), \(error))")
        }
        clones = CloneBackends.choose(
            state: state, directory: directory, root: prepared.root, reflinks: CloneBook.probe(directory),
            linked: (linkedCloneStore, linkedClones), blockMaps: blockMaps)
        clones.settleAtMount(root: prepared.root)
        // Start the session with the journal folded into one snapshot.
        recency.compactAtMount(state, snapshotIsCurrent: scan.recencyIsCurrent)
    }

    /// A state file decoded, or nil when it is missing; an unreadable one is
    /// set aside with a line in the log, and purgefs starts afresh.
    private static func load<T>(_ name: String, from directory: StateDirectory, _ decode: ([UInt8]) -> T?) -> T? {
        guard let bytes = try? directory.read(name) else { return nil }
        guard let value = decode(bytes) else {
            Diagnostics.note("state file \(name) is malformed; starting afresh")
            return nil
        }
        return value
    }

    private static func say(_ line: String, ending: String = "\n") {
        try? FileDescriptor.standardError.writeAll("purgefs: " + line + ending)
    }
}
