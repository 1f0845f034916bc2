import Glibc

/// Names as the kernel hands them over (`CName`: bytes ending in NUL, valid
/// only during the call), kept as Swift values.
public enum CNames {
    /// `name` with its NUL, to keep (and to pass back to C later).
    /// Wraps `strlen(3)`.
    public static func copy(_ name: CName) -> [CChar] {
        Array(UnsafeBufferPointer(start: name, count: strlen(name) + 1))
    }

    /// `name`'s bytes, without the NUL. Wraps `strlen(3)`.
    public static func bytes(_ name: CName) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
    }

    /// Whether two names are the same bytes. Wraps `strcmp(3)`.
    public static func equal(_ name: CName, _ other: CName) -> Bool {
        strcmp(name, other) == 0
    }

    /// Whether `name` is `text`. Wraps `strcmp(3)`.
    public static func equal(_ name: CName, _ text: String) -> Bool {
        strcmp(name, text) == 0
    }

    /// Whether `name` begins with `prefix`. Wraps `strncmp(3)`.
    public static func hasPrefix(_ name: CName, _ prefix: String) -> Bool {
        strncmp(name, prefix, prefix.utf8.count) == 0
    }

    /// Whether `name` begins with `prefix` (its bytes, without a NUL): for
    /// a prefix asked often, made once, as no `String` is bridged to C at
    /// each call. Wraps `strncmp(3)`.
    public static func hasPrefix(_ name: CName, _ prefix: [CChar]) -> Bool {
        prefix.withUnsafeBufferPointer { strncmp(name, $0.baseAddress!, $0.count) == 0 }
    }
}
