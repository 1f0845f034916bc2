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
///
/// Every folder is its owner's only (`PrivateDirectory`: `0700`, made and
/// checked through descriptors; a folder of another user, one others may
/// write, or a symbolic link refuses the device), and every file `0600`:
/// no other user can read, write or lock anything in it. What is read back
/// is still checked (`DeviceRecordLines`): bounded in size, a file that
/// does not parse is ignored with one line in the daemon log.
public struct DeviceDirectory: Sendable {
    public let name: String
    public let path: String
    let descriptor: FileDescriptor
    /// `device/`, the folder of every device of this user (for `removeAll`).
    let devices: FileDescriptor

    static let lockPatienceMilliseconds = 5_000
    /// The largest file read back: a member's record is about 22 KiB at
    /// its most (`DeviceMember.itemLimit` items), the others a few lines.
    static let fileLimit = 1 << 16
    /// The folders of a device.
    static let folders = ["members", "requests"]

    /// Where every device of this user lives.
    public static func root() -> String { RuntimeRecord.ownDirectoryPath + "/device" }

    /// Opens the device's directory, making it (and its folders) if
    /// `create`. Each folder on the way is checked (`PrivateDirectory`);
    /// the refusal's line names the folder and why.
    public static func open(_ name: String, create: Bool) throws(PrivateDirectory.Refusal) -> DeviceDirectory {
        let (runtimePath, runtime) = try RuntimeRecord.openOwnDirectory(create: create)
        defer { runtime.closeQuietly() }
        let devices = try PrivateDirectory.open("device", in: runtime, parentPath: runtimePath, create: create)
        let path = runtimePath + "/device/" + name
        do throws(PrivateDirectory.Refusal) {
            let descriptor = try PrivateDirectory.open(name, in: devices, parentPath: runtimePath + "/device", create: create)
            do throws(PrivateDirectory.Refusal) {
                for folder in folders {
                    try PrivateDirectory.open(folder, in: descriptor, parentPath: path, create: create).closeQuietly()
                }
            } catch {
                descriptor.closeQuietly()
                throw error
            }
            return DeviceDirectory(name: name, path: path, descriptor: descriptor, devices: devices)
        } catch {
            devices.closeQuietly()
            throw error
        }
    }

    public func close() {
        descriptor.closeQuietly()
        devices.closeQuietly()
    }

    // MARK: files

    /// The file's bytes, or nil when it is missing, unreadable, not a
    /// regular file, or longer than `fileLimit`.
    func read(_ relative: String) -> [UInt8]? {
        try? descriptor.readRegularFile(relative, limit: Self.fileLimit)
    }

    /// Replaces `relative` whole: written aside, renamed over. No sync: tmpfs.
    func replace(_ relative: String, with bytes: [UInt8]) throws(Errno) {
        try StateDirectory(descriptor: descriptor).replace(
            relative, with: bytes, aside: relative + ".new.\(CurrentProcess.id.rawValue)", mode: 0o600, durably: false)
    }

    func remove(_ relative: String) {
        _ = try? descriptor.unlink(relative)
    }

    /// Removes the whole device, its last member gone (under `lock`, whose
    /// file goes too: a member waiting for it sees `isRemoved` and opens the
    /// device afresh). Leaves it if anything unexpected is in it.
    func removeAll() {
        for name in ["settings", "leader.lock"] { remove(name) }
        for folder in Self.folders {
            for name in list(folder) { remove(folder + "/" + name) }
            _ = try? descriptor.unlink(folder, directory: true)
        }
        remove("lock")
        _ = try? devices.unlink(name, directory: true)
    }

    func exists(_ relative: String) -> Bool {
        (try? FileDescriptor.open(relative, in: descriptor, flags: OpenFlags.path | O_NOFOLLOW))
            .map { $0.closeQuietly(); return true } ?? false
    }

    /// The names in folder `relative`, at most `limit`.
    func list(_ relative: String, limit: Int = Int.max) -> [String] {
        guard let folder = try? FileDescriptor.open(relative, in: descriptor, flags: O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
              let stream = try? DirectoryStream(folder)
        else { return [] }
        folder.closeQuietly()
        var names: [String] = []
        while names.count < limit, let entry = try? stream.next() {
            if !entry.isDotOrDotDot { names.append(String(cString: entry.name)) }
        }
        return names
    }

    // MARK: locks

    /// Opens `relative` and takes its lock without waiting: the descriptor
    /// holding it, or nil when someone else holds it.
    func takeLock(_ relative: String, create: Bool = true) throws(Errno) -> FileDescriptor? {
        let file = try FileDescriptor.open(relative, in: descriptor, flags: O_RDWR | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0), mode: 0o600)
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

    /// The most members a snapshot reads: far more than one machine mounts.
    static let memberLimit = 256

    /// A file read back and decoded, or why it is refused; nil when it is missing.
    func decode<T>(_ relative: String, _ decoder: ([UInt8]) throws(DeviceRecordError) -> T) -> Result<T, DeviceRecordError>? {
        let data: [UInt8]
        do { data = try descriptor.readRegularFile(relative, limit: Self.fileLimit) } catch {
            if error == .noEntry { return nil }
            return .failure(DeviceRecordError(error == Errno(EFBIG) ? "longer than \(Self.fileLimit) bytes" : "unreadable: \(error)"))
        }
        do { return .success(try decoder(data)) } catch { return .failure(error) }
    }

    /// The settings and the records of the members that are alive; a file
    /// that does not parse is left out, and said in `problems`.
    public func snapshot() -> DeviceSnapshot {
        var problems: [String: DeviceRecordError] = [:]
        var settings: DeviceSettings?
        switch decode(DeviceSettings.fileName, DeviceSettings.init(reading:)) {
        case .success(let read): settings = read
        case .failure(let error): problems[DeviceSettings.fileName] = error
        case nil: break
        }
        var members: [DeviceMember] = []
        var dead: [String] = []
        for entry in list("members", limit: Self.memberLimit * 3) where !entry.contains(".") {
            guard members.count < Self.memberLimit else {
                problems["members"] = DeviceRecordError("more than \(Self.memberLimit) members: the rest are left out")
                break
            }
            guard isAlive(entry) else {
                dead.append(entry)
                continue
            }
            switch decode("members/" + entry, DeviceMember.init(reading:)) {
            case .success(let record) where record.key == entry: members.append(record)
            case .success(let record): problems["members/" + entry] = DeviceRecordError("holds the record of \(record.key.prefix(40))")
            case .failure(let error): problems["members/" + entry] = error
            case nil: break
            }
        }
        return DeviceSnapshot(name: name, settings: settings, members: members.sorted { $0.key < $1.key }, dead: dead,
                              problems: problems)
    }
}

/// A device as its files say at one moment.
public struct DeviceSnapshot: Sendable {
    public var name: String
    /// `nil`: no member has made it (or the last one left), or it does not parse.
    public var settings: DeviceSettings?
    /// The live members' records, by key.
    public var members: [DeviceMember]
    /// Members whose lock is free (killed): their records are ignored.
    public var dead: [String]
    /// The files that did not parse (by name in the device's directory), and why.
    public var problems: [String: DeviceRecordError] = [:]

    /// Each member's quota (`DevicePlanner.quotas`).
    public func quotas(backingSize: UInt64) -> [String: UInt64] {
        guard let settings else { return [:] }
        let size = settings.capacity ?? backingSize
        let cacheSpace = size.subtractingClamped(settings.external.addingClamped(unpurgeable))
        return DevicePlanner.quotas(
            of: members.map { .init(name: $0.key, cacheQuota: $0.cacheQuota, activeSeconds: $0.activeSeconds) },
            cacheSpace: cacheSpace)
    }

    /// The members' usage outside their caches, summed (saturating: each is bounded, their number is not).
    public var unpurgeable: UInt64 {
        members.reduce(UInt64(0)) { $0.addingClamped($1.used.subtractingClamped($1.purgeable)) }
    }

    /// The members' usage, summed (saturating).
    public var used: UInt64 { members.reduce(UInt64(0)) { $0.addingClamped($1.used) } }
}

/// Why the device's lock could not be had.
public enum DeviceBusy: Error {
    /// Held for longer than any holder needs it.
    case busy
    /// The last member removed the device's directory meanwhile.
    case removed
}
