import PurgeCore
import PurgeEngines

/// `purgefs help attributes`: every `user.purgefs.*` name, from
/// `PurgeAttribute` (the names, places and access the daemon obeys).
enum AttributesHelp {
    static let topic = "attributes"
    static let abstract = "Every user.purgefs.* attribute: where, read or write, units"

    static var text: String {
        var sections: [String] = []
        sections.append(TextLayout.paragraph(
            "purgefs answers these extended attributes itself (getfattr -n NAME PATH; setfattr -n NAME -v VALUE "
            + "PATH). They are not listed by listxattr (getfattr -d shows none of them), so copying tools do not "
            + "carry them; every other attribute is the container's own and passes through. Values are decimal "
            + "ASCII without a newline unless the unit says otherwise. Sizes are bytes; a SIZE written is bytes "
            + "or a number with K, M, G or T, powers of 1024 (1K = 1024)."))
        let header = row(name: "NAME", access: "ACCESS", unit: "UNIT")
        let rows = PurgeAttribute.allCases.map { attribute in
            row(name: attribute.fullName, access: attribute.access.rawValue, unit: attribute.unitText) + "\n"
                + TextLayout.indented(
                    "On \(attribute.placesText)" + (attribute.setterText.map { "; set by \($0)" } ?? "") + ". "
                        + attribute.summary.prefix(1).uppercased() + attribute.summary.dropFirst() + ".", by: 6)
        }
        sections.append(([header] + rows).joined(separator: "\n"))
        sections.append("Errors:\n" + [
            TextLayout.row("ENODATA", "read of a name that is not defined, or does not apply to that path (a file's "
                           + "name on a directory, a root figure below the root, a cloud name without cloud=), "
                           + "or of a write-only name", column: 12),
            TextLayout.row("EINVAL", "write of a name that is not defined, read-only, or does not apply to that "
                           + "path; or a bad value (a flag other than 0 or 1, a size that does not parse, a device "
                           + "the device's rule refuses: the reason goes to the daemon log)", column: 12),
            TextLayout.row("EPERM", "write of capacity, external or purge by someone other than the mount's owner "
                           + "or root (checked after ENODATA/EINVAL for the name, before the value)", column: 12),
            TextLayout.row("EBUSY", "evict of a file that is not uploaded, changed since, open, or shares data "
                           + "with a clone, or whose recorded copy the store does not show: nothing is removed "
                           + "(user.purgefs.evictable says which; the daemon log says the store's)", column: 12),
            TextLayout.row("ERANGE", "a buffer too small for the value (a size probe answers at least 20)", column: 12),
        ].joined(separator: "\n"))
        sections.append(TextLayout.paragraph(
            "Removing pinned, group or tombstone (setfattr -x) sets it to 0; removing any other purgefs name is "
            + "ENODATA. Writers: with default_permissions (which allow_other always brings), the kernel asks for "
            + "write permission on the path, as for any user.* attribute."))
        return sections.joined(separator: "\n\n")
    }

    private static func row(name: String, access: String, unit: String) -> String {
        let head = "  " + name
        let padded = head + String(repeating: " ", count: max(1, 42 - head.count))
        let middle = access + String(repeating: " ", count: max(1, 12 - access.count))
        return padded + middle + unit
    }
}
