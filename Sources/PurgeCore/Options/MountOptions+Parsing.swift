extension MountOptions {
    /// Reads every `-o` argument given (each a comma-separated list, in
    /// order), then validates the result as a whole.
    ///
    /// A repeated option: the last one wins (a zone list is replaced, not
    /// merged). Pass-through FUSE options are kept in order in `fuseOptions`
    /// (libfuse too lets a later `rw` undo an earlier `ro`).
    public static func parse(_ optionList: [String]) throws(OptionError) -> MountOptions {
        var options = MountOptions()
        for argument in optionList {
            for item in OptionList.split(argument) {
                try options.apply(item)
            }
        }
        try options.validate()
        return options
    }

    /// The `-o` items that `parse` reads back into these options: each
    /// purgefs option given or set away from its default, in the table's
    /// order, then the pass-through options as given.
    public var optionItems: [String] {
        let defaults = MountOptions()
        let own = MountOptionCatalog.purgefsOptions.compactMap { entry -> String? in
            guard given.contains(entry.field) || entry.item(of: self) != entry.item(of: defaults) else { return nil }
            return entry.item(of: self)
        }
        return own + fuseOptions
    }

    /// Applies one option item (`name` or `name=value`): a purgefs option
    /// through its entry in `MountOptionCatalog`, then FUSE's own options
    /// and the words that are accepted and dropped.
    mutating func apply(_ item: String) throws(OptionError) {
        let name: String, value: String?
        if let equals = item.firstIndex(of: "=") {
            name = String(item[..<equals])
            value = String(item[item.index(after: equals)...])
        } else {
            name = item
            value = nil
        }
        if let entry = MountOptionCatalog.entry(named: name) {
            given.insert(entry.field)
            try entry.apply(value, to: &self)
            return
        }
        typealias Parse = MountOptionCatalog.Parse
        switch name {
        case "subtype":
            let text = try Parse.required(name, value)
            guard text == "purgefs" else { throw .unsupportedSubtype(text) }
            fuseOptions.append(item)
        case "max_read":
            let text = try Parse.required(name, value)
            guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), UInt32(text) != nil else {
                throw .invalidValue(option: name, value: text, reason: text.isEmpty ? .empty : .notASize)
            }
            fuseOptions.append(item)
        case _ where MountOptionCatalog.passThroughFlags.contains(name):
            try Parse.flag(name, value)
            fuseOptions.append(item)
        case _ where MountOptionCatalog.passThroughValueOptions.contains(name):
            let text = try Parse.required(name, value)
            if text.isEmpty { throw .invalidValue(option: name, value: text, reason: .empty) }
            fuseOptions.append(item)
        case _ where MountOptionCatalog.ignoredPrefixes.contains(where: { item.hasPrefix($0) }):
            break
        case _ where MountOptionCatalog.ignoredWords.contains(name):
            try Parse.flag(name, value)
        default:
            throw .unknownOption(name)
        }
    }
}
