import Glibc
import PurgeCore
import PurgeSys

/// Publishes this daemon's `RuntimeRecord` for its mount, and removes it.
struct RuntimePublication {
    let directory: String
    let fileName: String

    /// Writes the record once the mount is in the table. Failing to publish
    /// is not fatal (only `purgefs log` and `metrics` of a covered state
    /// directory need it): it is said in the daemon log.
    static func publish(mountpoint: String, state: FileDescriptor, container: String, options: MountOptions) -> RuntimePublication? {
        guard let mount = (try? MountTable.current())?.topmost(at: mountpoint), mount.isPurgefs else {
            Diagnostics.note("cannot find this mount in the mount table to publish it")
            return nil
        }
        let record = RuntimeRecord(
            processID: CurrentProcess.id.rawValue, stateDescriptor: state.rawValue, container: container, zones: options.purgeableZones,
            bundle: options.bundle, low: options.low, high: options.high)
        let directory = RuntimeRecord.ownDirectoryPath
        let publication = RuntimePublication(directory: directory, fileName: RuntimeRecord.fileName(mountID: mount.id))
        do {
            let (_, folder) = try RuntimeRecord.openOwnDirectory(create: true)
            defer { folder.closeQuietly() }
            do throws(Errno) { try StateDirectory(descriptor: folder).replace(publication.fileName, with: record.encoded) } catch {
                Diagnostics.note("cannot publish the runtime record in \(directory): \(error)")
                return nil
            }
        } catch {
            Diagnostics.note("cannot publish the runtime record: runtime directory \(error)")
            return nil
        }
        return publication
    }

    /// Removes the record if it is still this daemon's; one already gone is
    /// fine. It is withdrawn after the mount has left the table, and the
    /// kernel may by then have given the mount's ID to a new mount, whose
    /// daemon has published its own record under the same name: that one
    /// stays. (Between the check and the removal a new record could still
    /// land: a window of two system calls, against a mount and a daemon's
    /// start.)
    func withdraw() {
        let path = directory + "/" + fileName
        do throws(Errno) {
            if let record = RuntimeRecord(decoding: try FileDescriptor.readFile(path, limit: 1 << 16)),
               record.processID != CurrentProcess.id.rawValue {
                return
            }
            try Paths.removeFile(path)
        } catch where error == .noEntry {
        } catch {
            Diagnostics.note("cannot withdraw the runtime record \(directory)/\(fileName): \(error)")
        }
    }
}
