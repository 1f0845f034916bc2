/// Where a container's state went when its last mount kept it elsewhere
/// (`state=DIR`): a one-line file, `state-pointer`, in the container's own
/// `.purgefs` (when there is one, from an earlier mount), so that commands
/// reading an unmounted container (`purgefs log`, `purgefs metrics`) read
/// the state the container really has, not an old `.purgefs`. A mount with
/// the default state directory removes it.
public enum StatePointer {
    public static let fileName = "state-pointer"

    /// The path, and a newline.
    public static func encoded(_ stateDirectory: String) -> [UInt8] {
        Array((stateDirectory + "\n").utf8)
    }

    /// The absolute path the file names, or nil for anything else.
    public static func decoded(_ data: [UInt8]) -> String? {
        var text = String(decoding: data, as: UTF8.self)
        if text.hasSuffix("\n") { text.removeLast() }
        guard !text.contains("\n"), let path = AbsolutePath.normalise(text) else { return nil }
        return path
    }
}
