import PurgeCore
import PurgeSys

/// Reads the rules file of `faults=FILE`: the command checks it before
/// mounting, the daemon loads it at mount; both say what is wrong in one
/// line naming the file (and the line).
public enum FaultRulesFile {
    public static func load(_ path: String) throws(MountError) -> [FaultRule] {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try FileDescriptor.readFile(path, limit: 1 << 20)
        } catch {
            throw MountError("faults=\(path): cannot read the rules file: \(error)")
        }
        do throws(FaultRuleError) {
            return try FaultRuleFile.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw MountError("faults=\(path): \(error)")
        }
    }
}
