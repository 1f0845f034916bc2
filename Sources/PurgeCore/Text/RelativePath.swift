/// Normalises a path that names something inside the container (a zone, the bundle).
///
/// `./Library//Caches/` becomes `Library/Caches`. Refused: an empty path,
/// an absolute one, any `..` component (a zone must never reach outside the
/// container), and a path that normalises to the container itself.
public enum RelativePath {
    public static func normalise(_ path: String) throws(RelativePathProblem) -> String {
        if path.isEmpty { throw .empty }
        if path.hasPrefix("/") { throw .absolute }
        var components: [Substring] = []
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            if component == "." { continue }
            if component == ".." { throw .parentReference }
            components.append(component)
        }
        if components.isEmpty { throw .containerItself }
        return components.joined(separator: "/")
    }

    /// True when `inner` is `outer` or lies below it (both normalised).
    public static func isSameOrInside(_ inner: String, _ outer: String) -> Bool {
        inner == outer || inner.hasPrefix(outer + "/")
    }
}
