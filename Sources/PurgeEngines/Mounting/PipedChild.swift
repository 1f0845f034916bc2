import PurgeSys

/// A child started with one of its descriptors writing into a pipe that we
/// read (the daemon's ready line, fusermount3's stderr) and stdin on
/// `/dev/null`. Our copy of the write end is closed before `start` returns,
/// on success and on failure: left open, reading would never see end of
/// file and the command would hang for as long as the child lives.
public struct PipedChild {
    /// Which step failed, so each caller can say it in its own words.
    public enum Failure: Error {
        case pipe(Errno)
        case spawn(Errno)
    }

    public let pid: ProcessID
    /// The read end; the caller closes it.
    public let output: FileDescriptor

    /// Starts `path` (see `ChildProcess.spawn`) with the pipe's write end as `descriptor`.
    public static func start(_ path: String, arguments: [String], environment: [String],
                      pipeAs descriptor: FileDescriptor, searchPath: Bool = false) throws(Failure) -> PipedChild {
        let readEnd: FileDescriptor, writeEnd: FileDescriptor
        do throws(Errno) {
            (readEnd, writeEnd) = try FileDescriptor.pipe()
        } catch {
            throw .pipe(error)
        }
        defer { writeEnd.closeQuietly() }
        do throws(Errno) {
            let pid = try ChildProcess.spawn(
                path, arguments: arguments, environment: environment,
                fileActions: [.duplicate(writeEnd, to: descriptor),
                              .open("/dev/null", as: .standardInput, flags: OpenFlags.readOnly)],
                searchPath: searchPath)
            return PipedChild(pid: pid, output: readEnd)
        } catch {
            readEnd.closeQuietly()
            throw .spawn(error)
        }
    }
}
