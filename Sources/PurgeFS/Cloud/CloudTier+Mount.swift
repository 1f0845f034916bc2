import Glibc
import PurgeCore
import PurgeSys

/// What the tier does at mount, before the container is indexed: the
/// decisions are `CloudReconcile`'s (PurgeCore); here the zones are walked,
/// the remote listed, and the actions carried out: the journal replayed
/// (deletes and renames a killed daemon did not finish, and those made while
/// unmounted, replayed by the worker once mounted), holes made again, the remote's documents this container lacks
/// (a new device) shown as evicted placeholders, and what is not uploaded
/// yet scheduled.
extension CloudTier {
    /// Finds what the zones and the remote hold, asks `CloudReconcile` what
    /// to do, saves the manifest it gives, and carries out the actions.
    func reconcileAtMount() {
        for name in remote.removeStaleUploads(olderThan: 3600) {
            Diagnostics.note("removed \(CloudDirectory.incomingName)/\(name) from the remote, left by an interrupted upload")
        }
        var local = CloudLocal.scan(zones: zones, from: root)
        let listing = try? remote.list()
        let found = local.mapValues { CloudLocalFile(signature: CloudSignature($0), allocated: $0.st_blocks != 0) }
        let remoteFound = listing.map { files in
            Dictionary(files.map { path, status in (path, CloudSignature(status)) }, uniquingKeysWith: { first, _ in first })
        }
        let (actions, manifest) = withBooks { books in
            let plan = CloudReconcile.plan(manifest: books.manifest, local: found, remote: remoteFound, zones: zones)
            books.manifest = plan.manifest
            save(books.manifest)
            return plan
        }
        // The remote copies by the name they have once the intents are applied.
        var remoteByPath: [String: stat] = [:]
        for (path, status) in listing ?? [] {
            if let destination = manifest.intents.destination(of: path) { remoteByPath[destination] = status }
        }
        // The journal is replayed by the worker's first pass, once mounted: on a
        // remote of rclone's every delete or rename is seconds of HTTP calls,
        // which must not hold the mount (the journal is saved, a kill keeps it).
        let now = WallClock.nanoseconds()
        for action in actions {
            switch action {
            case .removeRemote, .renameRemote:
                break  // intents, applied above
            case .restoreHole(let path, let signature):
                do { local[path] = try CloudLocal.restoreHole(path, like: signature, from: root) } catch {
                    Diagnostics.note("cannot restore evicted document \(path): \(error)")
                }
            case .placeholder(let path):
                guard let status = remoteByPath[path] else { continue }
                do {
                    let placeholder = try CloudLocal.makePlaceholder(path, like: status, from: root)
                    local[path] = placeholder
                    withBooks { books in
                        books.manifest.records[path] = CloudRecord(
                            signature: CloudSignature(placeholder), evicted: true, remote: status)
                    }
                } catch {
                    Diagnostics.note("cannot show remote document \(path): \(error)")
                }
            case .upload(let path):
                withBooks { $0.pending[path] = now }
            }
        }
        withBooks { books in
            for (path, status) in local { books.paths[EntryID(status)] = path }
            save(books.manifest)
        }
    }
}

extension CloudTier {
    /// The tier for a mount with `cloud=`, reconciled with the remote, or
    /// nil without `cloud=`. A store that cannot be prepared (rclone
    /// missing, an unknown remote, credentials refused) is a `MountError`:
    /// nothing is mounted.
    static func prepare(request: MountRequest, root: FileDescriptor, state: FileDescriptor) throws(MountError) -> CloudTier? {
        guard let location = request.options.cloud else { return nil }
        let store: any CloudStore
        switch location {
        case .directory(let path): store = CloudDirectory(path: path)
        case .rclone(let remote, let path): store = RcloneStore(remote: remote, path: path, state: state)
        }
        do throws(CloudFailure) { try store.prepare() } catch {
            store.stop()
            throw MountError("cloud=\(location): \(error)")
        }
        let tier = CloudTier(
            store: store, zones: request.options.ubiquitousZones, root: root,
            stateDirectory: StateDirectory(descriptor: state), optimizeStorage: request.options.optimizeStorage)
        tier.reconcileAtMount()
        return tier
    }

    /// Takes what the tier needs of the mount (`CloudMount`), once its filesystem exists.
    func attach(to mount: MountAssembly, log: PurgeLog) {
        attach(to: CloudMount(mount), log: log)
    }

    /// Starts the worker once the filesystem exists.
    func start(mount: MountAssembly, log: PurgeLog) {
        attach(to: mount, log: log)
        remote.attach(faults: mount.faults)
        start()
    }
}
