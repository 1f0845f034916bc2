import Glibc
import PurgeCore
import PurgeFS
import PurgeSys

/// A recording kept beside a report (`--report FILE` → `FILE.recording`,
/// `--keep DIR` → `DIR/recording`): the operation log, its data file, the
/// tree the run started from (`initial`) and what the command printed after
/// the last operation (`trailing`). `purgefs explore --replay REPORT STATE
/// DIR` makes one state again from it and the container the report names,
/// which must still be the one explored (its fingerprint: every entry's
/// path, kind, mode and size, a link's target and a file's bytes).
public enum ExploreReplay {
    /// FNV-1a over the tree `entries` describes, read under `root`: a file
    /// changed in place to the same size is another container too (a state
    /// rebuilt on it would hold bytes the run never had).
    static func fingerprint(_ entries: [CrashExploration.InitialEntry], root: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func fold(_ bytes: some Sequence<UInt8>) {
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for entry in entries where !isState(entry.path) {
            fold("\(entry.path)\u{0}\(entry.kind.rawValue)\(entry.mode)\(entry.kind == .file ? entry.size : 0)\u{0}".utf8)
            fold(entry.target)
            guard entry.kind == .file,
                  let file = try? FileDescriptor.open(path: root + "/" + entry.path, flags: O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            else { continue }
            defer { file.closeQuietly() }
            var offset: Int64 = 0
            while let count = try? file.read(into: buffer, at: offset), count > 0 {
                fold(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                offset += Int64(count)
            }
        }
        return String(hash, radix: 16)
    }

    static func isState(_ path: String) -> Bool {
        path == MountOptions.defaultStateDirectoryName || path.hasPrefix(MountOptions.defaultStateDirectoryName + "/")
    }

    static func save(workspace: ExploreWorkspace, initial: [CrashExploration.InitialEntry], output: [UInt8], to directory: String) throws(CommandExit) {
        var failed: String?
        do throws(Errno) {
            try OwnMount.removeWithPatience(directory, missingIsFine: true)
            try Paths.makeDirectory(directory, mode: 0o755)
            for name in [RecordedOperation.operationsFileName, RecordedOperation.dataFileName] {
                let (status, text) = try OwnMount.capture("cp", arguments: ["cp", "--reflink=auto", "--", workspace.record + "/" + name, directory + "/" + name],
                                                          outputPath: workspace.work + "/.output")
                if status.exitCode != 0 { failed = OwnMount.reason(text, status) }
            }
            let lines = initial.map {
                "\(RecordedOperation.hex(Array($0.path.utf8))) \(RecordedOperation.text($0.id)) \($0.kind.rawValue) \(String($0.mode, radix: 8)) \($0.size) \(RecordedOperation.hex($0.target))"
            }
            try ExploreSession.write(lines.joined(separator: "\n") + "\n", to: directory + "/initial")
            try ExploreSession.write(String(decoding: output, as: UTF8.self), to: directory + "/trailing")
        } catch {
            throw .failure("explore: cannot keep the recording in \(directory): \(error)")
        }
        if let failed { throw .failure("explore: cannot keep the recording in \(directory): cp \(failed)") }
    }

    static func loadInitial(_ text: String) -> [CrashExploration.InitialEntry]? {
        var entries: [CrashExploration.InitialEntry] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 6, let path = RecordedOperation.unhex(fields[0]), let id = RecordedOperation.entry(fields[1]),
                  let kind = RecordedOperation.EntryKind(rawValue: String(fields[2])), let mode = UInt32(fields[3], radix: 8),
                  let size = ByteSize.bounded(UInt64(fields[4])), let target = RecordedOperation.unhex(fields[5]) else { return nil }
            entries.append(CrashExploration.InitialEntry(path: String(decoding: path, as: UTF8.self), id: id, kind: kind, mode: mode, size: size, target: target))
        }
        return entries
    }

    /// The model `state` was explored under: the first its failure names,
    /// else the report's (`model`, or the first of `models`); `posix` for a
    /// report from before models (its names followed POSIX's rule).
    static func model(of state: CrashExploration.StateID, in report: JSONValue) -> CrashFilesystemModel {
        let failure = report["failures"]?.arrayValue?.first { $0["state"]?.stringValue == state.description }
        let name = failure?["models"]?.arrayValue?.first?.stringValue ?? report["model"]?.stringValue
            ?? report["models"]?.arrayValue?.first?.stringValue
        return name.flatMap(CrashFilesystemModel.init(rawValue:)) ?? .posix
    }

    public static func run(report path: String, state: CrashExploration.StateID, into directory: String) throws(CommandExit) {
        let bytes: [UInt8]
        do throws(Errno) { bytes = try FileDescriptor.readFile(path, limit: 1 << 28) } catch {
            throw .failure("explore: cannot read the report \(path): \(error)")
        }
        guard let report = JSONValue(parsing: String(decoding: bytes, as: UTF8.self)), let container = report["container"]?.stringValue,
              let fingerprint = report["fingerprint"]?.stringValue else {
            throw .failure("explore: \(path) is not a report of purgefs explore")
        }
        guard let recording = report["recording"]?.stringValue else {
            throw .failure("explore: \(path) has no recording beside it (it was not written with --report FILE)")
        }
        guard !Paths.exists(directory) else { throw .usage("explore: \(directory) exists already: give a new directory for the state") }
        let now: [CrashExploration.InitialEntry]
        do throws(Errno) { now = try OperationLog.tree(of: container) } catch {
            throw .failure("explore: cannot read the container \(container) that \(path) names: \(error)")
        }
        guard Self.fingerprint(now, root: container) == fingerprint else {
            throw .failure("explore: \(path) was made from another container than \(container) is now (its files differ): nothing made")
        }
        let records: [RecordedOperation]
        let initial: [CrashExploration.InitialEntry]
        let data: FileDescriptor
        do throws(Errno) {
            guard let parsed = try OperationLog.records(in: recording),
                  let tree = loadInitial(String(decoding: try FileDescriptor.readFile(recording + "/initial", limit: 1 << 28), as: UTF8.self)) else {
                throw Errno(EINVAL)
            }
            records = parsed
            initial = tree
            data = try OperationLog.openData(in: recording)
        } catch {
            throw .failure("explore: cannot read the recording \(recording): \(error)")
        }
        defer { data.closeQuietly() }
        let exploration = CrashExploration(initial: initial, records: records, model: model(of: state, in: report))
        // The log names bytes of the data file: it must hold them all (a log
        // that names more, cut short or made by hand, would replay writes of
        // any length).
        guard let status = try? data.status(), UInt64(max(status.st_size, 0)) >= exploration.dataNeeded else {
            throw .failure("explore: the recording \(recording) is not whole: its operations name \(exploration.dataNeeded) bytes of data")
        }
        guard let made = exploration.states([state]).first else {
            throw .failure("explore: \(path) has no state \(state) (points 1 to \(exploration.operationCount))")
        }
        do throws(Errno) {
            try CrashStateBuilder(directory: directory, base: container, data: data).build(made)
        } catch {
            throw .failure("explore: cannot make state \(state) in \(directory): \(error)")
        }
        try? FileDescriptor.standardOutput.writeAll(
            "explore: state \(state) in \(directory): after \(made.operation); lost: \(made.lost.isEmpty ? "nothing" : made.lost.joined(separator: "; "))\n")
    }
}
