import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// This daemon's membership of a shared device (`-o device=NAME`): the
/// cooperating-daemons design (docs/DESIGN.md, "Shared devices").
///
/// Each container keeps its own daemon, ledger and purger; the device is a
/// directory of small files (`DeviceDirectory`). Four times a second, on
/// the space monitor's thread, each member reads the settings and the other
/// members' records (`refresh`: the others' usage becomes its model's
/// `neighbours`), answers the purge requests addressed to it, and publishes
/// its own record. The member holding `leader.lock` also plans for the
/// whole device (`DevicePlanner`) when available space drops below the low
/// mark: its own share it purges itself, the others' it leaves as requests
/// and does not wait for. A write that does not fit plans the same way,
/// and waits (boundedly) for the others' answers.
///
/// Who waits for whom: a member's request handlers may wait for another
/// member's monitor thread (a purge request), at most `requestPatience`,
/// and never while holding a lock of theirs but `writeSerial`; a monitor
/// thread never waits for another daemon. So no cycle: the thread that
/// answers requests is never one that waits for an answer.
final class SharedDevice: FileSystemObserver, Sendable {
    let directory: DeviceDirectory
    /// This container's identity on the device: its backing root's `st_dev:st_ino`.
    let key: String
    let cacheQuota: UInt64?
    let container: String
    let mountpoint: String
    let backing: UInt64
    /// Held for the daemon's life: it says this member is alive.
    private let memberLock: FileDescriptor
    /// `members/KEY.usage`, mapped shared: this member's usage as it changes
    /// (`publishUsage`), which the others read at every statfs and space
    /// attribute (`readNeighbours`). Slots: `usageSlots`.
    private let usage: SharedCounters?
    private let view = Mutex(View())
    /// What a member's rounds use of its mount while it is one: its state and
    /// its purger, never the filesystem itself.
    private let filesystem = Mutex<Member?>(nil)

    struct Member: Sendable {
        let state: ContainerState
        let purger: Purger
    }
    /// One cross-container purge for a write at a time.
    private let writeSerial = ThreadLock()
    /// One refresh at a time (the monitor, a write, a change of the
    /// settings), so an older snapshot never replaces a newer one. Held
    /// across reads of the device's small files only.
    private let refreshing = ThreadLock()
    private let lastUse = Atomic<UInt64>(0)
    private let lastActiveSecond = Atomic<UInt64>(0)
    private let activeSeconds = Atomic<UInt64>(0)
    private let sequence = Atomic<UInt64>(0)
    /// The device's files that did not parse, as last said in the log: each
    /// is said once, not at every round.
    private let reported = Mutex<[String: DeviceRecordError]>([:])

    /// How long a write waits for the other members to answer its requests.
    static let requestPatienceMilliseconds = 5_000

    private struct View: ~Copyable {
        var settings: DeviceSettings?
        var others: [DeviceMember] = []
        var published: [UInt8] = []
        var leader: FileDescriptor?
        /// The monitor's requests not answered yet: file name → when it gives up.
        var pending: [String: UInt64] = [:]
        /// The other members' `usage` files, mapped, by key.
        var usages: [String: SharedCounters] = [:]
    }

    /// A usage file's slots: set (1 once written), used bytes, purgeable bytes.
    private enum UsageSlot { static let set = 0, used = 1, purgeable = 2, count = 3 }

    private init(directory: DeviceDirectory, key: String, request: MountRequest, backing: UInt64, memberLock: FileDescriptor,
                 usage: SharedCounters?) {
        self.usage = usage
        self.directory = directory
        self.key = key
        self.cacheQuota = request.options.cacheQuota
        self.container = request.container
        self.mountpoint = request.mountpoint
        self.backing = backing
        self.memberLock = memberLock
    }

    // MARK: joining and leaving

    /// Joins the device `request.options.device`, making it if this is its
    /// first member; refuses (one line) the same container twice, options
    /// that disagree with the device's, a real device on another filesystem.
    static func join(_ request: MountRequest, root: FileDescriptor) throws(MountError) -> SharedDevice? {
        guard let name = request.options.device else { return nil }
        let status: stat
        do { status = try root.status() } catch { throw MountError("cannot read container \(request.container): \(error)") }
        let key = "\(status.st_dev):\(status.st_ino)"
        let backing = UInt64(status.st_dev)
        // The last member may remove the device while this one opens it: then again.
        for _ in 0..<8 {
            if let device = try joinOnce(request, name: name, key: key, backing: backing) { return device }
        }
        throw MountError("cannot join device \(name): its last member kept leaving as this one joined")
    }

    /// One try at joining; nil when the device's directory went meanwhile.
    private static func joinOnce(_ request: MountRequest, name: String, key: String, backing: UInt64) throws(MountError) -> SharedDevice? {
        let directory: DeviceDirectory
        do { directory = try DeviceDirectory.open(name, create: true) } catch {
            throw MountError("cannot use device \(name): \(error)")
        }
        let outcome: Result<FileDescriptor, MountError>
        do {
            outcome = try directory.withLock { () throws(MountError) -> FileDescriptor in
                let snapshot = directory.snapshot()
                for dead in snapshot.dead { directory.clear(dead) }
                if let twin = snapshot.members.first(where: { $0.key == key }) {
                    throw MountError("container \(request.container) is already on device \(name): pid \(twin.processID) "
                                     + "serves it at \(twin.mountpoint)")
                }
                if let settings = snapshot.settings, !snapshot.members.isEmpty {
                    if let line = settings.disagreement(with: request.options, backing: backing, name: name) {
                        throw MountError(line)
                    }
                } else {
                    let settings = DeviceSettings(options: request.options, backing: backing)
                    // What every member reads back must parse: sizes within what the file may hold.
                    do throws(DeviceRecordError) { _ = try DeviceSettings(reading: settings.encoded) } catch {
                        throw MountError("cannot make device \(name): \(error)")
                    }
                    do { try directory.replace(DeviceSettings.fileName, with: settings.encoded) } catch {
                        throw MountError("cannot make device \(name): \(error)")
                    }
                }
                let taken: FileDescriptor?
                do { taken = try directory.takeLock("members/\(key).lock") } catch {
                    throw MountError("cannot join device \(name): \(error)")
                }
                guard let lock = taken else { throw MountError("container \(request.container) is already on device \(name)") }
                let record = DeviceMember(key: key, processID: CurrentProcess.id.rawValue, container: request.container,
                                          mountpoint: request.mountpoint, backing: backing, cacheQuota: request.options.cacheQuota)
                do { try directory.replace("members/\(key)", with: record.encoded) } catch {
                    lock.closeQuietly()
                    throw MountError("cannot join device \(name): \(error)")
                }
                return lock
            }
        } catch {
            directory.close()
            if error == .removed { return nil }
            throw MountError("device \(name) is busy: its lock has been held for over \(DeviceDirectory.lockPatienceMilliseconds / 1000) s")
        }
        switch outcome {
        case .success(let lock):
            // Without it the others see this member's usage at its rounds only, as its record shows it.
            let usage = try? SharedCounters.open("members/\(key).usage", in: directory.descriptor, count: UsageSlot.count, create: true)
            return SharedDevice(directory: directory, key: key, request: request, backing: backing, memberLock: lock, usage: usage)
        case .failure(let error):
            directory.close()
            throw error
        }
    }

    /// Starts serving as a member: from now on the monitor's rounds come here.
    func attach(_ filesystem: Member) {
        self.filesystem.withLock { $0 = filesystem }
        refresh(filesystem.state)
        publish(filesystem.state)
    }

    /// Leaves the device (unmount); the last member takes the settings with it.
    func leave() {
        filesystem.withLock { $0 = nil }
        _ = try? directory.withLock { () -> Void in
            directory.clear(key)
            memberLock.closeQuietly()
            if directory.snapshot().members.isEmpty { directory.removeAll() }
        }
        view.withLock { view in
            view.leader?.closeQuietly()
            view.leader = nil
        }
        directory.close()
    }

    // MARK: what the handlers announce: use

    func opened(_ id: EntryID) { noteUse() }
    func used(_ id: EntryID) { noteUse() }

    // What changes this member's usage, published at once (the ledger heard it first).
    func resized(_ status: stat, id: EntryID) { publishUsage() }
    func created(_ status: stat, id: EntryID, name: CName, in parent: EntryID, opened: Bool) { publishUsage() }
    func removed(_ status: stat, id: EntryID, name: CName, from parent: EntryID) { publishUsage() }

    /// Stores this member's usage in its mapped `usage` file: memory stores,
    /// no call, no lock of another daemon's.
    private func publishUsage() {
        guard let usage, let state = filesystem.withLock({ $0?.state }) else { return }
        publishUsage(state, into: usage)
    }

    private func publishUsage(_ state: ContainerState, into usage: SharedCounters) {
        let (used, purgeable) = state.read { ledger, _ in (ledger.usage, ledger.rootTotals.purgeable) }
        usage.store(used, at: UsageSlot.used)
        usage.store(purgeable, at: UsageSlot.purgeable)
        usage.store(1, at: UsageSlot.set)
    }

    /// The others' usage as their mapped files say now (as their records
    /// say, for one not mapped yet), adopted into the model: called before
    /// every statfs and space attribute, so a write through another member
    /// shows at once. Memory loads under the view's lock only.
    func readNeighbours(_ state: ContainerState) {
        let (settings, others, usages) = view.withLock { ($0.settings, $0.others, $0.usages) }
        guard let settings else { return }
        adopt(settings, others: others, usages: usages, into: state)
    }

    private func adopt(_ settings: DeviceSettings, others: [DeviceMember], usages: [String: SharedCounters], into state: ContainerState) {
        var used: UInt64 = 0
        var purgeable: UInt64 = 0
        for member in others {
            // Another process's memory: bounded as its record's figures are.
            if let usage = usages[member.key], usage.load(at: UsageSlot.set) == 1 {
                used = used.addingClamped(min(usage.load(at: UsageSlot.used), DeviceRecordLines.maximumBytes))
                purgeable = purgeable.addingClamped(min(usage.load(at: UsageSlot.purgeable), DeviceRecordLines.maximumBytes))
            } else {
                used = used.addingClamped(member.used)
                purgeable = purgeable.addingClamped(member.purgeable)
            }
        }
        // A real device's free space already shows the others' files.
        state.adoptDevice(settings.model, neighbours: settings.capacity == nil ? 0 : used, neighbourPurgeable: purgeable)
    }

    /// Use, for the quota: the last moment, and how many distinct seconds had any.
    private func noteUse() {
        let now = WallClock.nanoseconds()
        lastUse.store(now, ordering: .relaxed)
        let second = now / 1_000_000_000
        if lastActiveSecond.exchange(second, ordering: .relaxed) != second {
            activeSeconds.add(1, ordering: .relaxed)
        }
    }

    // MARK: the monitor's round

    /// One round, on the space monitor's thread: see the type's comment.
    func round() {
        guard let filesystem = filesystem.withLock({ $0 }) else { return }
        refresh(filesystem.state)
        answerRequests(filesystem)
        publish(filesystem.state)
        guard lead() else { return }
        settlePending()
        guard view.withLock({ $0.pending.isEmpty }) else { return }
        let target = filesystem.state.monitorTarget()
        guard target > 0 else { return }
        if !purgeAcross(target, reason: .monitor, filesystem, waiting: false).planned {
            filesystem.state.stopMonitorEpisode()  // nothing purgeable on the whole device
        }
    }

    /// A write that does not fit: purges `bytes` across the device by its
    /// policy, waiting for the other members' answers. Returns bytes freed,
    /// or nil when this container is not (or no longer) a member.
    func purgeForWrite(_ bytes: UInt64) -> UInt64? {
        guard let filesystem = filesystem.withLock({ $0 }) else { return nil }
        return writeSerial.withLock {
            refresh(filesystem.state)
            let before = filesystem.state.status().available
            let freed = purgeAcross(bytes, reason: .write, filesystem, waiting: true).freed
            refresh(filesystem.state)
            // Another purge (the device's monitor's requests) may have freed it meanwhile.
            return max(freed, filesystem.state.status().available.subtractingClamped(before))
        }
    }

    /// Reads the settings and the others' records into the model.
    func refresh(_ state: ContainerState) {
        refreshing.withLock { refreshHolding(state) }
    }

    private func refreshHolding(_ state: ContainerState) {
        let snapshot = directory.snapshot()
        report(snapshot.problems)
        if !snapshot.dead.isEmpty {
            _ = try? directory.withLock { for dead in snapshot.dead { directory.clear(dead) } }
        }
        let others = snapshot.members.filter { $0.key != key }
        // New members' usage files are mapped here, outside the view's lock.
        var usages = view.withLock { $0.usages }.filter { known in others.contains { $0.key == known.key } }
        for member in others where usages[member.key] == nil {
            usages[member.key] = try? SharedCounters.open(
                "members/\(member.key).usage", in: directory.descriptor, count: UsageSlot.count, create: false)
        }
        let settings = view.withLock { view in
            if let settings = snapshot.settings { view.settings = settings }
            view.others = others
            view.usages = usages
            return view.settings
        }
        guard let settings else { return }
        adopt(settings, others: others, usages: usages, into: state)
    }

    /// Says in the daemon log each file that does not parse, once while it stays so.
    private func report(_ problems: [String: DeviceRecordError]) {
        let fresh = reported.withLock { reported in
            let fresh = problems.filter { reported[$0.key] != $0.value }
            reported = problems
            return fresh
        }
        for (file, problem) in fresh.sorted(by: { $0.key < $1.key }) {
            Diagnostics.note("device \(directory.name): \(file) is ignored: \(problem)")
        }
    }

    /// This member's record now.
    func record(_ state: ContainerState) -> DeviceMember {
        let (used, size, purgeable, items) = state.read { ledger, _ in
            (ledger.usage, ledger.rootTotals.size, ledger.rootTotals.purgeable, ledger.purgeOrderHead(limit: DeviceMember.itemLimit))
        }
        return DeviceMember(key: key, processID: CurrentProcess.id.rawValue, container: container, mountpoint: mountpoint,
                            backing: backing, used: used, size: size, purgeable: purgeable, cacheQuota: cacheQuota,
                            lastUse: lastUse.load(ordering: .relaxed), activeSeconds: activeSeconds.load(ordering: .relaxed),
                            items: items)
    }

    /// Writes this member's record if it changed.
    func publish(_ state: ContainerState) {
        if let usage { publishUsage(state, into: usage) }
        let encoded = record(state).encoded
        guard view.withLock({ $0.published != encoded }) else { return }
        do {
            try directory.replace("members/\(key)", with: encoded)
            view.withLock { $0.published = encoded }
        } catch {
            Diagnostics.note("cannot publish this container's record on device \(directory.name): \(error)")
        }
    }

    /// Takes the device's monitor if nobody has it (its holder died, say).
    private func lead() -> Bool {
        view.withLock { view in
            if view.leader != nil { return true }
            view.leader = (try? directory.takeLock("leader.lock")) ?? nil
            return view.leader != nil
        }
    }

    // MARK: planning and requests

    /// Plans `need` bytes across the device and carries out this member's
    /// share; leaves the others' as requests, and with `waiting` waits for
    /// their answers. `planned`: whether anything was planned at all.
    private func purgeAcross(_ need: UInt64, reason: PurgeLog.Reason, _ filesystem: Member,
                             waiting: Bool) -> (planned: Bool, freed: UInt64) {
        let me = record(filesystem.state)
        let (settings, others) = view.withLock { ($0.settings, $0.others) }
        guard let settings else { return (false, 0) }
        var snapshot = DeviceSnapshot(name: directory.name, settings: settings, members: [me] + others, dead: [])
        snapshot.members.sort { $0.key < $1.key }
        let quotas = snapshot.quotas(backingSize: filesystem.state.status().capacity)
        let shares = DevicePlanner.plan(
            need, members: snapshot.members.map { $0.plannerMember(quota: quotas[$0.key] ?? 0) }, policy: settings.policy)
        guard !shares.isEmpty else { return (false, 0) }
        var posted: [String] = []
        for share in shares where share.member != key {
            if let request = post(share.bytes, to: share.member, reason: reason) { posted.append(request) }
        }
        var freed: UInt64 = 0
        if let mine = shares.first(where: { $0.member == key }) {
            freed = freed.addingClamped(filesystem.purger.purge(.bytes(mine.bytes), reason: reason))
        }
        if waiting {
            freed = freed.addingClamped(awaitAnswers(posted))
        } else {
            let deadline = WallClock.nanoseconds() + UInt64(Self.requestPatienceMilliseconds) * 1_000_000
            view.withLock { view in for request in posted { view.pending[request] = deadline } }
        }
        return (true, freed)
    }

    /// Leaves a request for `bytes` to `target`; its file name, or nil.
    private func post(_ bytes: UInt64, to target: String, reason: PurgeLog.Reason) -> String? {
        let name = "\(target)@\(key).\(CurrentProcess.id.rawValue).\(sequence.add(1, ordering: .relaxed).newValue)"
        do {
            try directory.replace("requests/" + name, with: Array("bytes \(bytes)\nreason \(reason.rawValue)\n".utf8))
            return name
        } catch {
            Diagnostics.note("cannot leave a purge request on device \(directory.name): \(error)")
            return nil
        }
    }

    /// Waits for the answers to `requests`, at most `requestPatience`, and
    /// not for a member that died; returns what they freed.
    private func awaitAnswers(_ requests: [String]) -> UInt64 {
        var freed: UInt64 = 0
        var open = Set(requests)
        var waited = 0
        while !open.isEmpty {
            for request in open {
                if let answer = directory.read("requests/\(request).done") {
                    freed = freed.addingClamped(Self.answered(answer, request: request, device: directory.name))
                    directory.remove("requests/\(request).done")
                    open.remove(request)
                } else if !directory.isAlive(String(request.prefix { $0 != "@" })) || waited >= Self.requestPatienceMilliseconds {
                    directory.remove("requests/" + request)
                    open.remove(request)
                }
            }
            if open.isEmpty { break }
            CurrentProcess.sleep(milliseconds: 5)
            waited += 5
        }
        return freed
    }

    /// The monitor's requests: answered ones and ones given up on are forgotten.
    private func settlePending() {
        let pending = view.withLock { $0.pending }
        guard !pending.isEmpty else { return }
        let now = WallClock.nanoseconds()
        var settled: [String] = []
        for (request, deadline) in pending {
            if directory.exists("requests/\(request).done") {
                directory.remove("requests/\(request).done")
                settled.append(request)
            } else if now >= deadline || !directory.isAlive(String(request.prefix { $0 != "@" })) {
                directory.remove("requests/" + request)
                settled.append(request)
            }
        }
        view.withLock { view in for request in settled { view.pending[request] = nil } }
    }

    /// The most requests answered in one round; the rest wait for the next.
    static let requestLimit = 64

    /// A request's file: `bytes N` (at most `DeviceRecordLines.maximumBytes`) and `reason R`.
    static func request(reading data: [UInt8]) throws(DeviceRecordError) -> (bytes: UInt64, reason: PurgeLog.Reason) {
        let lines = try DeviceRecordLines(data)
        let reasonName = try lines.text("reason")
        guard let reason = PurgeLog.Reason(rawValue: reasonName) else { throw DeviceRecordError("reason \(reasonName.prefix(40)) is unknown") }
        return (try lines.bytes("bytes"), reason)
    }

    /// What an answer says was freed; 0 (and a line in the log) when it does not parse.
    static func answered(_ data: [UInt8], request: String, device: String) -> UInt64 {
        do throws(DeviceRecordError) { return try DeviceRecordLines(data).bytes("freed") } catch {
            Diagnostics.note("device \(device): the answer to request \(request.prefix(80)) is refused: \(error)")
            return 0
        }
    }

    /// Purges what the others asked of this member, publishes the record
    /// that shows it, then answers each request with what it freed.
    private func answerRequests(_ filesystem: Member) {
        let mine = directory.list("requests", limit: Self.requestLimit * 4)
            .filter { $0.hasPrefix(key + "@") && !$0.contains(".new.") && !$0.hasSuffix(".done") }
            .prefix(Self.requestLimit)
        guard !mine.isEmpty else { return }
        var answers: [(String, UInt64)] = []
        for request in mine {
            switch directory.decode("requests/" + request, Self.request(reading:)) {
            case nil: continue
            case .failure(let error):
                Diagnostics.note("device \(directory.name): request \(request.prefix(80)) is refused: \(error)")
                answers.append((request, 0))
            case .success(let (bytes, reason)):
                answers.append((request, bytes > 0 ? filesystem.purger.purge(.bytes(bytes), reason: reason) : 0))
            }
        }
        publish(filesystem.state)
        for (request, freed) in answers {
            do {
                try directory.replace("requests/\(request).done", with: Array("freed \(freed)\n".utf8))
            } catch {
                Diagnostics.note("cannot answer a purge request on device \(directory.name): \(error)")
            }
            directory.remove("requests/" + request)
        }
    }

    // MARK: settings

    /// A change of capacity or external through this member (`setfattr`,
    /// `purgefs space`): checked against the device's rule and its
    /// members' usage, written for all, adopted here at once.
    func change(capacity: UInt64?, external: UInt64?, _ state: ContainerState) throws(OptionError) {
        let backingSize = state.status().capacity
        let me = record(state)
        let result: Result<Void, OptionError>
        do {
            result = try directory.withLock { () throws(OptionError) in
                var snapshot = directory.snapshot()
                guard var settings = snapshot.settings else { return }
                snapshot.members = snapshot.members.filter { $0.key != key } + [me]
                if let capacity { settings.capacity = capacity }
                if let external { settings.external = external }
                settings.generation += 1
                try settings.validateChange(deviceSize: settings.capacity == nil ? backingSize : nil,
                                            unpurgeable: snapshot.unpurgeable)
                do { try directory.replace(DeviceSettings.fileName, with: settings.encoded) } catch {
                    Diagnostics.note("cannot change device \(directory.name): \(error)")
                }
            }
        } catch {
            throw .deviceBusy(directory.name)
        }
        try result.get()
        refresh(state)
    }

    /// Figures for the root's `device_*` attributes.
    func figures(_ state: ContainerState) -> (containers: UInt64, used: UInt64, quota: UInt64) {
        let me = record(state)
        let (settings, others) = view.withLock { ($0.settings, $0.others) }
        let snapshot = DeviceSnapshot(name: directory.name, settings: settings, members: others + [me], dead: [])
        let quota = snapshot.quotas(backingSize: state.status().capacity)[key] ?? 0
        return (UInt64(others.count + 1), snapshot.used, quota)
    }
}
