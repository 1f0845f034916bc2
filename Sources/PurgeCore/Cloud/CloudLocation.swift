/// Where `cloud=` puts the ubiquitous zones' documents: a directory reached
/// with POSIX calls (`cloud=DIR`), or a remote of rclone's (`cloud=rclone:REMOTE:PATH`,
/// REMOTE as `rclone config` or rclone's `RCLONE_CONFIG_*` variables name it).
public enum CloudLocation: Equatable, Sendable, CustomStringConvertible {
    case directory(String)
    case rclone(remote: String, path: String)

    public static let rclonePrefix = "rclone:"

    /// `rclone:REMOTE:PATH`: REMOTE is a name of letters, digits, `_`, `-`,
    /// `.`, `+`, `@` and spaces, not starting with `-` or a space (rclone's
    /// own rule for remote names); PATH may be empty (the remote's root).
    /// Nil for a value without the `rclone:` prefix.
    public static func rclone(parsing text: String) throws(ValueError) -> CloudLocation? {
        guard text.hasPrefix(rclonePrefix) else { return nil }
        let rest = text.dropFirst(rclonePrefix.count)
        guard let colon = rest.firstIndex(of: ":") else { throw .notARcloneRemote }
        let remote = String(rest[..<colon])
        let path = String(rest[rest.index(after: colon)...])
        guard !remote.isEmpty, !remote.hasPrefix("-"), !remote.hasPrefix(" "), !remote.hasSuffix(" "),
              remote.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.+@ ".contains($0)) })
        else { throw .notARcloneRemote }
        guard !path.contains("\n"), !path.contains("\0") else { throw .notARcloneRemote }
        return .rclone(remote: remote, path: path)
    }

    /// The option's value: `DIR` or `rclone:REMOTE:PATH`.
    public var description: String {
        switch self {
        case .directory(let path): return path
        case .rclone(let remote, let path): return Self.rclonePrefix + remote + ":" + path
        }
    }
}
