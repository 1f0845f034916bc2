import PurgeCore
import PurgeSys

/// What the crash names need of the mount: what a crash now would undo, and the crash.
protocol CrashSimulating: AnyObject, Sendable {
    func pendingCrash() -> [String]
    func crash() -> [String]
}

/// The root's `crash` (with `crashable`: read, what a crash now would undo,
/// one line each; write `1`, crash) and `last_crash` (what the last one undid).
struct CrashAttributes: AttributeProvider {
    let recorder: CrashRecorder
    /// The crash itself (`CrashSimulation`).
    let simulation: any CrashSimulating

    var attributes: [PurgeAttribute] { [.crash, .lastCrash] }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        switch attribute {
        case .crash:
            guard recorder.keep != nil else { throw Errno.noData }  // not `crashable`
            return Self.fitting(simulation.pendingCrash())
        case .lastCrash:
            return Self.fitting(recorder.lastReport.withLock { $0 })
        default:
            throw Errno.noData
        }
    }

    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        guard attribute == .crash, recorder.keep != nil, value.text == "1" else { throw Errno.invalidArgument }
        let report = simulation.crash()
        recorder.lastReport.withLock { $0 = report }
    }

    /// Report lines, one per line, within an attribute value's 64 KiB: the
    /// lines past that are counted in a last line.
    static func fitting(_ lines: [String]) -> String {
        var text = ""
        for (index, line) in lines.enumerated() {
            if text.utf8.count + line.utf8.count + 1 > 60_000 {
                return text + "... and \(lines.count - index) more\n"
            }
            text += line + "\n"
        }
        return text
    }
}
