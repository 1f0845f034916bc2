import CLinux
import Glibc
import PurgeCore
import PurgeSys

/// The files a shared device keeps under the runtime directory
/// (`/run/purgefs/device/NAME` for root): the settings every member shares,
/// one record and one lock file per member, and the purge requests members
/// leave each other. It lives on tmpfs: nothing in it needs to survive a
/// reboot (no member does), and every file is replaced whole by a rename,
/// so a member killed mid-write leaves the old version or the new one.
///
/// - `lock`: held (`flock`) for a few file operations at a time: joining,
///   leaving, a change of the settings, clearing a dead member away. Never
///   across a purge, a wait or a request of the kernel's; taken without
///   waiting, retried for at most `lockPatienceMilliseconds`.
/// - `settings`: `DeviceSettings`.
/// - `leader.lock`: held by the member whose monitor plans for the device.
/// - `members/KEY` (`DeviceMember`) and `members/KEY.lock`, held by the
///   member for its whole life: a lock anyone can take belongs to a dead
///   member, whose record the others ignore and clear away.
/// - `requests/TARGET@FROM.SEQ`: "purge this much"; answered by renaming it
///   to `….done` with what was freed.
public struct DeviceDirectory: Sendable {
    public let name: String
    public let path: String
    let descriptor: FileDescriptor

    static let lockPatienceMilliseconds = 5_000

    /// Where every device of this user lives.
    public static func root() -> String {
        RuntimeRecord.directory(user: CurrentProcess.effectiveUserID,
                                runtimeDirectory: CurrentProcess.environmentValue("XDG_RUNTIME_DIR")) + "/device"
    }

    /// Opens the device's directory, making it (and its folders) if `create`.
    public static func open(_ name: String, create: Bool) throws(Errno) -> DeviceDirectory {
        let root = Self.root()
        let path = root + "/" + name
        if create {
            for folder in [String(root.dropLast("/device".count)), root, path, path + "/members", path + "/requests"] {
                do throws(Errno) { try Paths.makeDirectory(folder, mode: 0o755) } catch where error == .exists {}
            }
        }
        let descriptor = try FileDescriptor.open(path: path, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        return DeviceDirectory(name: name, path: path, descriptor: descriptor)
    }

    func close() { descriptor.closeQuietly() }

    // MARK: files

    /// The file's bytes, or nil when it is missing or unreadable.
    func read(_ relative: String) -> [UInt8]? {
        (try? StateDirectory(descriptor: descriptor).read(relative)) ?? nil
    }

    /// Replaces `relative` whole: written aside, renamed over. No sync: tmpfs.
    func replace(_ relative: String, with bytes: [UInt8]) throws(Errno) {
        try StateDirectory(descriptor: descriptor).replace(
            relative, with: bytes, aside: relative + ".new.\(CurrentProcess.id.rawValue)", mode: 0o644, durably: false)
    }

    func remove(_ relative: String) {
        _ = try? descriptor.unlink(relative)
    }

    /// Removes the whole device, its last member gone (under `lock`, whose
    /// file goes too: a member waiting for it sees `isRemoved` and opens the
    /// device afresh). Leaves it if anything unexpected is in it.
    func removeAll() {
        for name in ["settings", "leader.lock"] { remove(name) }
        for folder in ["members", "requests"] {
            for name in list(folder) { remove(folder + "/" + name) }
            _ = try? descriptor.unlink(folder, directory: true)
        }
        remove("lock")
        guard let parent = try? FileDescriptor.open(path: DeviceDirectory.root(), flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW) else { return }
        defer { parent.closeQuietly() }
        _ = try? parent.unlink(name, directory: true)
    }

    func exists(_ relative: String) -> Bool {
        (try? FileDescriptor.open(relative, in: descriptor, flags: OpenFlags.path | O_NOFOLLOW))
            .map { $0.closeQuietly(); return true } ?? false
    }

    /// The names in folder `relative`.
    func list(_ relative: String) -> [String] {
        guard let folder = try? FileDescriptor.open(relative, in: descriptor, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
              let stream = try? DirectoryStream(folder)
        else { return [] }
        folder.closeQuietly()
        var names: [String] = []
        while let entry = try? stream.next() {
            if !entry.isDotOrDotDot { names.append(String(cString: entry.name)) }
        }
        return names
    }

    // MARK: locks

    /// Opens `relative` and takes its lock without waiting: the descriptor
    /// holding it, or nil when someone else holds it.
    func takeLock(_ relative: String, create: Bool = true) throws(Errno) -> FileDescriptor? {
        let file = try FileDescriptor.open(relative, in: descriptor, flags: O_RDWR | O_NOFOLLOW | (create ? O_CREAT : 0), mode: 0o644)
        do {
            if try file.lockExclusivelyWithoutWaiting() { return file }
        } catch {
            file.closeQuietly()
            throw error
        }
        file.closeQuietly()
        return nil
    }

    /// Whether the last member removed the directory (after this one opened it).
    var isRemoved: Bool { ((try? descriptor.status())?.st_nlink ?? 0) == 0 }

    /// Runs `body` holding the device's `lock`; waits for it at most
    /// `lockPatienceMilliseconds` (its holders never wait while holding it).
    /// Throws `.removed` when the directory went meanwhile: open it again.
    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(DeviceBusy) -> Result<T, E> {
        var waited = 0
        while true {
            if isRemoved { throw .removed }
            if let held = try? takeLock("lock") {
                defer { held.closeQuietly() }
                if isRemoved { throw .removed }
                do { return .success(try body()) } catch { return .failure(error) }
            }
            guard waited < Self.lockPatienceMilliseconds else { throw .busy }
            CurrentProcess.sleep(milliseconds: 5)
            waited += 5
        }
    }

    /// Whether the member `key` still runs: its lock is held. A lock taken
    /// here is let go at once.
    func isAlive(_ key: String) -> Bool {
        guard let taken = try? takeLock("members/\(key).lock", create: false) else {
            // Held by the member, or its lock file is gone (it left).
            return exists("members/\(key).lock")
        }
        taken.closeQuietly()
        return false
    }

    /// Clears away what a dead (or departed) member left: its record, its
    /// lock file, the requests addressed to it and the answers to its own.
    /// Under `lock`.
    func clear(_ key: String) {
        remove("members/\(key)")
        remove("members/\(key).lock")
        remove("members/\(key).usage")
        // The requests addressed to it, and the answers to its own.
        for request in list("requests") where request.hasPrefix(key + "@") || request.contains("@\(key).") {
            remove("requests/" + request)
        }
    }

    // MARK: reading the device

    /// The settings and the records of the members that are alive.
    public func snapshot() -> DeviceSnapshot {
        let settings = read(DeviceSettings.fileName).flatMap(DeviceSettings.init(decoding:))
        var members: [DeviceMember] = []
        var dead: [String] = []
        for entry in list("members") where !entry.contains(".") {
            guard isAlive(entry) else {
                dead.append(entry)
                continue
            }
            if let record = read("members/" + entry).flatMap(DeviceMember.init(decoding:)) { members.append(record) }
        }
        return DeviceSnapshot(name: name, settings: settings, members: members.sorted { $0.key < $1.key }, dead: dead)
    }
}

/// A device as its files say at one moment.
public struct DeviceSnapshot: Sendable {
    public var name: String
    /// `nil`: no member has made it (or the last one left).
    public var settings: DeviceSettings?
    /// The live members' records, by key.
    public var members: [DeviceMember]
    /// Members whose lock is free (killed): their records are ignored.
    public var dead: [String]

    /// Each member's quota (`DevicePlanner.quotas`).
    public func quotas(backingSize: UInt64) -> [String: UInt64] {
        guard let settings else { return [:] }
        let size = settings.capacity ?? backingSize
        let cacheSpace = size.subtractingClamped(settings.external.addingClamped(unpurgeable))
        return DevicePlanner.quotas(
            of: members.map { .init(name: $0.key, cacheQuota: $0.cacheQuota, activeSeconds: $0.activeSeconds) },
            cacheSpace: cacheSpace)
    }

    /// The members' usage outside their caches, summed.
    public var unpurgeable: UInt64 { members.reduce(UInt64(0)) { $0.addingClamped($1.used.subtractingClamped($1.purgeable)) } }
}

/// Why the device's lock could not be had.
public enum DeviceBusy: Error {
    /// Held for longer than any holder needs it.
    case busy
    /// The last member removed the device's directory meanwhile.
    case removed
}
