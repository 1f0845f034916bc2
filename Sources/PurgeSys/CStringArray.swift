import Glibc

/// A NULL-terminated array of C strings for `argv` or `envp`: each string
/// copied with `strdup(3)`, all freed with the array. `pointer` stays valid
/// (and unchanged) for as long as the array lives.
public final class CStringArray {
    /// The strings, not counting the NULL at the end.
    public let count: Int
    private let storage: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

    public init(_ strings: [String]) {
        count = strings.count
        storage = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { (storage + index).initialize(to: strdup(string)) }
        (storage + strings.count).initialize(to: nil)
    }

    deinit {
        for index in 0..<count { free(storage[index]) }
        storage.deinitialize(count: count + 1)
        storage.deallocate()
    }

    /// The array, for C calls that take `char **`.
    public var pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> { storage }

    public func withPointer<Result>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result) -> Result {
        withExtendedLifetime(self) { body(storage) }
    }
}
