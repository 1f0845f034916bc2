import PurgeCore
import PurgeEngines
import PurgeSys

/// Where a command that reads a container's state (`log`, `metrics`) finds
/// it: through the daemon of a mount (whose state directory an in-place
/// mount covers), the directory `--state DIR` names, a state directory
/// given as the path, or an unmounted container's own `.purgefs`, following
/// its `state-pointer` when its last mount kept the state elsewhere.
struct StateLocator: Equatable {
    /// Where the state's files are read from.
    var directory: String
    /// The container the state belongs to.
    var container: String
    /// The live mount read through its daemon, if that is where it is.
    var mountpoint: String?
    var record: RuntimeRecord?

    /// The flag, as every such command spells it.
    static let flag = "--state"

    /// `--state DIR` in a command's `FlagTable`.
    static func flag<Command>(_ field: WritableKeyPath<Command, String?> & Sendable, _ help: String) -> Flag<Command> {
        .value(flag, "DIR", field, help)
    }

    static func locate(_ pathArgument: String, state: String?) throws(CommandExit) -> StateLocator {
        let location = try MountLocation.find(pathArgument)
        if let state {
            let directory = try existingDirectory(state, role: "state directory")
            return StateLocator(directory: directory, container: holder(of: directory)?.container ?? location.path)
        }
        if let mount = location.mount {
            try location.requireMountPoint()
            let record = try RuntimeRecordLocator.record(of: mount, at: location.path)
            let directory = record.stateDirectoryPath
            do throws(Errno) {
                guard try Paths.isDirectory(directory) else { throw Errno.notDirectory }
            } catch {
                throw .failure("cannot reach the state directory of the daemon (pid \(record.processID)) serving \(location.path) through \(directory): \(error)")
            }
            return StateLocator(directory: directory, container: record.container, mountpoint: location.path, record: record)
        }
        let path = location.path
        let own = MountOptions().stateDirectoryPath(containerPath: path)
        if isDirectory(own) {
            guard let data = try? FileDescriptor.readFile(own + "/" + StatePointer.fileName, limit: 65536),
                  let elsewhere = StatePointer.decoded(data)
            else { return StateLocator(directory: own, container: path) }
            guard isDirectory(elsewhere) else {
                throw .failure("the last mount of \(path) kept its state in \(elsewhere) (state=), which is not a directory now; "
                    + "give \(flag) DIR")
            }
            return StateLocator(directory: elsewhere, container: path)
        }
        if Paths.exists(path + "/" + StateLockHolder.fileName) {
            return StateLocator(directory: path, container: holder(of: path)?.container ?? path)
        }
        throw .failure("\(path) is neither a purgefs mount nor a container with a state directory (.purgefs); "
            + "for a container mounted with state=DIR, give \(flag) DIR")
    }

    /// Who last held (or holds) the state directory, from its lock file.
    private static func holder(of directory: String) -> StateLockHolder? {
        (try? FileDescriptor.readFile(directory + "/" + StateLockHolder.fileName, limit: 65536)).flatMap(StateLockHolder.init(decoding:))
    }

    private static func isDirectory(_ path: String) -> Bool { (try? Paths.isDirectory(path)) == true }

    /// The canonical path of an existing directory, or a one-line reason.
    private static func existingDirectory(_ path: String, role: String) throws(CommandExit) -> String {
        let resolved: String, directory: Bool
        do throws(Errno) {
            resolved = try Paths.canonical(path)
            directory = try Paths.isDirectory(resolved)
        } catch {
            throw .failure("\(role) \(path): \(error)")
        }
        guard directory else { throw .failure("\(role) \(path) is not a directory") }
        return resolved
    }
}
