import PurgeEngines

/// `-o` as every command that mounts takes it (`mount`, `run`, `explore`):
/// `-o OPT[,OPT...]` or `-oOPT[,OPT...]`, as many times as wanted, each
/// kept as typed for `MountOptions.parse`.
enum OptionArguments {
    /// The flag as the help shows it.
    static let term = "-o OPT[,OPT...]"

    /// The option list `argument` gives when it is `-o` (then the next
    /// argument, at `index`, which moves past it) or `-oOPTS`; `nil` for
    /// any other argument. `missing`: the usage message for a last `-o`.
    static func value(of argument: String, in arguments: [String], at index: inout Int,
                      missing: @autoclosure () -> String) throws(CommandExit) -> String? {
        guard argument.hasPrefix("-o") else { return nil }
        guard argument == "-o" else { return String(argument.dropFirst(2)) }
        guard index < arguments.count else { throw .usage(missing()) }
        defer { index += 1 }
        return arguments[index]
    }

    /// Takes every `-o` out of `flags` (the arguments before `--`), in
    /// order, leaving the other flags for the command's own parser.
    static func collect(from flags: inout [String], command: String) throws(CommandExit) -> [String] {
        var options: [String] = []
        var rest: [String] = []
        var index = 0
        while index < flags.count {
            let flag = flags[index]
            index += 1
            if let option = try value(of: flag, in: flags, at: &index, missing: "\(command): -o needs \(term.dropFirst(3))") {
                options.append(option)
            } else {
                rest.append(flag)
            }
        }
        flags = rest
        return options
    }
}
