import PurgeCore
import PurgeEngines

/// The arguments of a subcommand sorted into paths and flags, the same way
/// for every command that is not `mount`: `-h`/`--help` anywhere asks for
/// help; `--flag VALUE` and `--flag=VALUE` both work; `--` ends the flags;
/// `-` alone is a path. A flag given twice, an unknown flag or a missing
/// value is a usage error naming the command.
struct ParsedArguments: Equatable {
    var paths: [String] = []
    /// Flags that take a value, by name (`--capacity`).
    var values: [String: String] = [:]
    /// Flags without a value that were given.
    var switches: Set<String> = []

    /// - Parameters:
    ///   - command: the subcommand's name, for messages.
    ///   - valueFlags: flags that take a value, with the value's name for messages (`["--capacity": "SIZE"]`).
    ///   - switchFlags: flags without a value.
    init(_ arguments: [String], command: String, help: String,
         valueFlags: [String: String] = [:], switchFlags: Set<String> = []) throws(CommandExit) {
        if arguments.prefix(while: { $0 != "--" }).contains(where: { $0 == "-h" || $0 == "--help" }) {
            throw .help(help)
        }
        var index = 0
        var pathsOnly = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if pathsOnly || argument == "-" || !argument.hasPrefix("-") {
                paths.append(argument)
                continue
            }
            if argument == "--" {
                pathsOnly = true
                continue
            }
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            let inlineValue = argument.contains("=") ? String(argument.dropFirst(name.count + 1)) : nil
            if let valueName = valueFlags[name] {
                guard values[name] == nil else { throw .usage("\(command): \(name) is given twice") }
                if let inlineValue {
                    values[name] = inlineValue
                } else {
                    guard index < arguments.count else { throw .usage("\(command): \(name) needs a \(valueName)") }
                    values[name] = arguments[index]
                    index += 1
                }
            } else if switchFlags.contains(name) {
                if inlineValue != nil { throw .usage("\(command): \(name) takes no value (got \(argument))") }
                guard !switches.contains(name) else { throw .usage("\(command): \(name) is given twice") }
                switches.insert(name)
            } else {
                throw .usage("\(command): unknown flag '\(argument)' (see purgefs \(command) --help)")
            }
        }
    }

    /// The one path the command takes, named `role` in messages.
    func onePath(_ role: String, command: String) throws(CommandExit) -> String {
        guard let path = paths.first else { throw .usage("\(command): \(role) is missing (see purgefs \(command) --help)") }
        if path.isEmpty { throw .usage("\(command): an empty path was given") }
        if paths.count > 1 { throw .usage("\(command): unexpected argument '\(paths[1])'; give one \(role)") }
        return path
    }
}

extension ParsedArguments {
    /// The SIZE given with `flag`, if any; a malformed one is a usage error
    /// naming the flag and the value. `positive`: 0 is refused too.
    func size(_ flag: String, command: String, positive: Bool = false) throws(CommandExit) -> ByteSize? {
        guard let text = values[flag] else { return nil }
        return try FlagValue(command: command, flag: flag, text: text).size(positive: positive)
    }
}
