import PurgeCore
import PurgeEngines

/// The flags of one command, each written once (as `MountOptionCatalog`
/// does for mount options, and swift-argument-parser's `@Option` for a
/// command's): its names, the value's placeholder, its help line and how
/// its value sets the command's typed field. The command's parsing
/// (`parse` then `apply`) and the `Flags:` rows of its `--help` (`rows`)
/// are both made from it, so a flag's name is spelled in one place.
struct FlagTable<Command>: Sendable {
    /// The command's words, for messages: `space`, `fault list`.
    let command: String
    /// `-o OPT[,OPT...]`, when the command takes mount options: where the
    /// lists go (`OptionArguments` collects them) and the help line.
    let options: (field: WritableKeyPath<Command, [String]> & Sendable, help: String)?
    let flags: [Flag<Command>]

    init(_ command: String, options: (field: WritableKeyPath<Command, [String]> & Sendable, help: String)? = nil,
         _ flags: [Flag<Command>]) {
        self.command = command
        self.options = options
        self.flags = flags
    }

    /// Sorts `arguments` into paths and flags (`ParsedArguments`: `-h`
    /// anywhere throws `.help(help)`; an unknown flag, a flag given twice or
    /// a missing value is a usage error), taking the `-o` lists into
    /// `command` first when the table has them. The flags' values are read
    /// by `apply`, so the command chooses what it checks first.
    func parse(_ arguments: [String], help: String, into command: inout Command) throws(CommandExit) -> ParsedArguments {
        var arguments = arguments
        if let options {
            command[keyPath: options.field] = try OptionArguments.collect(from: &arguments, command: self.command)
        }
        var valueFlags: [String: String] = [:]
        var switchFlags: Set<String> = []
        for flag in flags {
            for name in flag.names {
                if let placeholder = flag.placeholder { valueFlags[name] = placeholder } else { switchFlags.insert(name) }
            }
        }
        return try ParsedArguments(arguments, command: self.command, help: help,
                                   valueFlags: valueFlags, switchFlags: switchFlags)
    }

    /// Sets the field of every flag given, in the table's order.
    func apply(_ parsed: ParsedArguments, to command: inout Command) throws(CommandExit) {
        for flag in flags {
            for name in flag.names {
                if let text = parsed.values[name] {
                    try flag.apply(&command, FlagValue(command: self.command, flag: name, text: text))
                } else if parsed.switches.contains(name) {
                    try flag.apply(&command, FlagValue(command: self.command, flag: name, text: ""))
                }
            }
        }
    }

    /// `parse` then `apply`: the paths that are left.
    func read(_ arguments: [String], help: String, into command: inout Command) throws(CommandExit) -> ParsedArguments {
        let parsed = try parse(arguments, help: help, into: &command)
        try apply(parsed, to: &command)
        return parsed
    }

    /// The help's rows: `-o` first, each flag, then `-h, --help`.
    var rows: String {
        let options = self.options.map { [TextLayout.row(OptionArguments.term, $0.help)] } ?? []
        return (options + flags.map(\.row) + [TextLayout.row("-h, --help", "show this help")]).joined(separator: "\n")
    }

    /// The flag `name` names, for a command that walks its arguments
    /// itself (`mount`, `unmount`: a switch may repeat there).
    func flag(named name: String) -> Flag<Command>? {
        flags.first { $0.names.contains(name) }
    }
}

/// One flag of a `FlagTable`.
struct Flag<Command>: Sendable {
    /// The names it is given by (`--capacity`).
    let names: [String]
    /// The value's name (`SIZE`); `nil` for a switch.
    let placeholder: String?
    /// Its line in `--help`.
    let help: String
    /// What it does to the command.
    let apply: @Sendable (inout Command, FlagValue) throws(CommandExit) -> Void
    /// `--capacity SIZE`, as the help shows it.
    let term: String

    private init(_ names: [String], _ placeholder: String?, _ help: String, term: String? = nil,
                 apply: @escaping @Sendable (inout Command, FlagValue) throws(CommandExit) -> Void) {
        self.names = names
        self.placeholder = placeholder
        self.help = help
        self.apply = apply
        self.term = term ?? names.joined(separator: ", ") + (placeholder.map { " " + $0 } ?? "")
    }

    var row: String { TextLayout.row(term, help) }

    /// A flag without a value that turns `field` on.
    static func `switch`(_ name: String, _ field: WritableKeyPath<Command, Bool> & Sendable, _ help: String) -> Self {
        .switch([name], field, help)
    }

    /// A switch with several names (`-f, --foreground`).
    static func `switch`(_ names: [String], _ field: WritableKeyPath<Command, Bool> & Sendable, _ help: String) -> Self {
        Self(names, nil, help) { command, _ in command[keyPath: field] = true }
    }

    /// A flag whose value is kept as typed.
    static func value(_ name: String, _ placeholder: String, _ field: WritableKeyPath<Command, String?> & Sendable, _ help: String) -> Self {
        Self([name], placeholder, help) { command, value in command[keyPath: field] = value.text }
    }

    /// A flag whose value `read` turns into the field's type.
    static func value<Value>(_ name: String, _ placeholder: String, _ field: WritableKeyPath<Command, Value> & Sendable, _ help: String,
                             read: @escaping @Sendable (FlagValue) throws(CommandExit) -> Value) -> Self {
        Self([name], placeholder, help) { (command: inout Command, value: FlagValue) throws(CommandExit) in
            command[keyPath: field] = try read(value)
        }
    }

    /// A row of the help that no argument matches: a form the command
    /// takes before its table (`run --explore`).
    static func helpRow(_ term: String, _ help: String) -> Self {
        Self([], nil, help, term: term) { _, _ in }
    }
}

/// The value given to one flag, for its reader.
struct FlagValue {
    let command: String
    let flag: String
    let text: String

    /// The usage error for a value `reason` refuses: `space: --capacity 0: must be more than 0`.
    func refused(_ reason: some CustomStringConvertible) -> CommandExit {
        .usage("\(command): \(flag) \(text): \(reason)")
    }

    /// The text read by a parser of PurgeCore's values.
    func read<Value>(_ parse: (String) throws(ValueError) -> Value) throws(CommandExit) -> Value {
        do throws(ValueError) {
            return try parse(text)
        } catch {
            throw refused(error)
        }
    }

    /// A SIZE; `positive`: 0 is refused too.
    func size(positive: Bool = false) throws(CommandExit) -> ByteSize {
        let size = try read(ByteSize.init(parsing:))
        if positive && size.bytes == 0 { throw refused(ValueError.zero) }
        return size
    }
}
