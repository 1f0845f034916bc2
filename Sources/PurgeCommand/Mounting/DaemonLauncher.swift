import PurgeEngines
import PurgeSys

/// The parent's half of the ready pipe (see `ReadySignal`): starts the
/// daemon and waits for its one line.
///
/// Daemonizing re-executes `/proc/self/exe` with `posix_spawn` instead of
/// forking: a fork of a multithreaded Swift process is unsafe.
enum DaemonLauncher {
    /// Starts `arguments` (argv, from argv[0]) as a daemon and returns once
    /// it reports ready; throws `.failure` with its reason otherwise.
    static func launch(arguments: [String]) throws(CommandExit) {
        CurrentProcess.markDescriptorsCloseOnExec(from: 3)
        let environment = CurrentProcess.environment.filter { !$0.hasPrefix(ReadySignal.environmentName + "=") }
            + ["\(ReadySignal.environmentName)=\(ReadySignal.descriptor.rawValue)"]
        let child: PipedChild
        do throws(PipedChild.Failure) {
            child = try PipedChild.start("/proc/self/exe", arguments: arguments, environment: environment,
                                         pipeAs: ReadySignal.descriptor)
        } catch {
            switch error {
            case .pipe(let error): throw .failure("cannot create the daemon's ready pipe: \(error)")
            case .spawn(let error): throw .failure("cannot start the daemon: \(error)")
            }
        }
        defer { child.output.closeQuietly() }

        let pid = child.pid
        let reply: [UInt8]
        do throws(Errno) {
            reply = try child.output.readLine()
        } catch {
            throw .failure("cannot read from the daemon (pid \(pid)): \(error)")
        }
        let line = String(decoding: reply, as: UTF8.self)
        if line == "ok" { return }
        if line.hasPrefix("error: ") { throw .failure(String(line.dropFirst("error: ".count))) }
        throw .failure("the daemon (pid \(pid)) \(describeEnd(of: pid)) before the mount was ready")
    }

    /// Why the pipe closed without a line: the daemon's exit status if it has
    /// ended (waiting up to about two seconds for it), else that it is still running.
    private static func describeEnd(of pid: ProcessID) -> String {
        for _ in 0..<200 {
            switch Result(catching: { () throws(Errno) in try ChildProcess.poll(pid) }) {
            case .success(let status?): return status.description
            case .success(nil): CurrentProcess.sleep(milliseconds: 10)
            case .failure(let error): return "ended (\(error))"
            }
        }
        return "closed its ready pipe without reporting (it is still running)"
    }
}
