/// Splits and joins `-o` option strings the way libfuse does.
///
/// libfuse's `fuse_opt_parse` splits on commas, and a backslash takes the
/// next character literally (`fsname=a\,b` is one option) or, before three
/// octal digits (`\054`), stands for that byte. purgefs splits the same way,
/// so a value means the same to purgefs and to libfuse, and `joined` puts
/// the escapes back before the pass-through options go to libfuse.
public enum OptionList {
    /// The items of one `-o` argument, unescaped; empty items are dropped
    /// (`a,,b` is `a`, `b`, as mount.fuse3 treats it).
    public static func split(_ text: String) -> [String] {
        var items: [String] = []
        var current: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        func isOctal(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "7") }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ",") {
                if !current.isEmpty { items.append(String(decoding: current, as: UTF8.self)) }
                current = []
                index += 1
            } else if byte == UInt8(ascii: "\\"), index + 1 < bytes.count {
                let next = bytes[index + 1]
                if index + 3 < bytes.count, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "3"),
                   isOctal(bytes[index + 2]), isOctal(bytes[index + 3]) {
                    let value = (next - 48) * 64 + (bytes[index + 2] - 48) * 8 + (bytes[index + 3] - 48)
                    current.append(value)
                    index += 4
                } else {
                    current.append(next)
                    index += 2
                }
            } else {
                current.append(byte)
                index += 1
            }
        }
        if !current.isEmpty { items.append(String(decoding: current, as: UTF8.self)) }
        return items
    }

    /// One `-o` string for libfuse: items joined with commas, with `\` and
    /// `,` inside an item escaped so libfuse splits it back the same way.
    public static func joined(_ items: [String]) -> String {
        // By scalar, as split reads bytes: a backslash followed by a combining
        // mark is one Character, and its backslash must be escaped too.
        items.map { item in
            var escaped = String.UnicodeScalarView()
            for scalar in item.unicodeScalars {
                if scalar == "\\" || scalar == "," { escaped.append("\\") }
                escaped.append(scalar)
            }
            return String(escaped)
        }.joined(separator: ",")
    }
}
