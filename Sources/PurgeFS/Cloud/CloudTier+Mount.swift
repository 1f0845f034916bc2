import Glibc
import PurgeCore
import PurgeSys

/// What the tier does at mount, before the container is indexed: replay the
/// journal, carry over deletes and renames a killed daemon did not finish,
/// show the remote's documents this container lacks (a new device) as
/// evicted placeholders, and schedule what is not uploaded yet.
extension CloudTier {
    func reconcileAtMount() {
        for name in remote.removeStaleUploads(olderThan: 3600) {
            Diagnostics.note("removed \(CloudRemote.incomingName)/\(name) from the cloud directory, left by an interrupted upload")
        }
        applyIntents(logging: false)  // the purge log is not open yet; the worker retries
        var local = CloudLocal.scan(zones: zones, from: root)
        var byInode: [UInt64: String] = [:]
        for (path, status) in local { byInode[UInt64(status.st_ino)] = path }
        lock.withLock {
            // A recorded file gone locally was deleted or renamed while the remote was not told.
            for (path, record) in manifest.records.sorted(by: { $0.key < $1.key }) where local[path] == nil {
                manifest.records[path] = nil
                if let moved = byInode[record.signature.inode], manifest.records[moved] == nil {
                    manifest.intents.append(.rename(path, moved))
                    if let status = local[moved], CloudSignature(status) == record.signature {
                        manifest.records[moved] = record
                    }
                } else {
                    manifest.intents.append(.remove(path))
                }
            }
            saveManifest()
        }
        applyIntents(logging: false)
        // A download cut short (kill -9) left part of the data: back to a hole, still evicted.
        let evicted = lock.withLock { manifest.records.filter { $0.value.evicted } }
        for (path, record) in evicted {
            guard let status = local[path], UInt64(status.st_ino) == record.signature.inode,
                  CloudSignature(status) != record.signature || status.st_blocks != 0
            else { continue }
            do {
                local[path] = try CloudLocal.restoreHole(path, like: record.signature, from: root)
            } catch {
                Diagnostics.note("cannot restore evicted document \(path): \(error)")
            }
        }
        // A new device: the remote's documents this container has never had.
        if let listing = try? remote.list() {
            for (path, status) in listing where local[path] == nil && CloudZones.contains(zones, path) {
                let known = lock.withLock { manifest.records[path] != nil }
                if known { continue }
                do {
                    let placeholder = try CloudLocal.makePlaceholder(path, like: status, from: root)
                    local[path] = placeholder
                    lock.withLock {
                        manifest.records[path] = CloudRecord(
                            signature: CloudSignature(placeholder), evicted: true, remote: status)
                    }
                } catch {
                    Diagnostics.note("cannot show remote document \(path): \(error)")
                }
            }
        }
        let now = WallClock.nanoseconds()
        lock.withLock {
            for (path, status) in local {
                paths[EntryID(status)] = path
                if manifest.records[path]?.signature != CloudSignature(status) { pending[path] = now }
            }
            saveManifest()
        }
    }
}

extension CloudTier {
    /// The tier for a mount with `cloud=`, reconciled with the remote, or nil.
    static func prepare(request: MountRequest, root: FileDescriptor, state: FileDescriptor) -> CloudTier? {
        guard let remote = request.options.cloud else { return nil }
        let tier = CloudTier(
            remote: remote, zones: request.options.ubiquitousZones, root: root,
            stateDirectory: StateDirectory(descriptor: state), optimizeStorage: request.options.optimizeStorage)
        tier.reconcileAtMount()
        return tier
    }

    /// Starts the worker once the filesystem exists.
    func start(filesystem: ContainerFileSystem, log: PurgeLog) {
        attach(to: filesystem, log: log)
        start()
    }
}
