/// Lexical handling of absolute paths (no filesystem access: the core does no I/O).
public enum AbsolutePath {
    /// `/a//b/./c/../d/` → `/a/b/d`; `..` above the root stays at the root.
    /// Returns `nil` for a path that does not start with `/`.
    public static func normalise(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return nil }
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": if !components.isEmpty { components.removeLast() }
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }

    /// The part of `path` below `base` (`""` when equal), or `nil` when
    /// `path` is not `base` or inside it. Both must be normalised.
    public static func relative(_ path: String, to base: String) -> String? {
        if path == base { return "" }
        let prefix = base == "/" ? "/" : base + "/"
        guard path.hasPrefix(prefix) else { return nil }
        return String(path.dropFirst(prefix.count))
    }
}
