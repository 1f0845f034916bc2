/// A rules file (`faults=FILE`): one rule a line, written as the arguments
/// of `purgefs fault add` without the mount point; words are separated by
/// blanks and may be quoted as in a shell ('...' as is, "..." with `\"`
/// and `\\`, `\` outside quotes takes the next character); `#` at the start
/// of a word comments out the rest of the line; blank lines are skipped.
public enum FaultRuleFile {
    /// The rules of `text`, in order; the first error names its line.
    public static func parse(_ text: String) throws(FaultRuleError) -> [FaultRule] {
        var rules: [FaultRule] = []
        for (index, line) in Self.lines(text).enumerated() {
            do throws(FaultRuleError) {
                let words = try self.words(of: line)
                if words.isEmpty { continue }
                rules.append(try FaultRule(arguments: words))
            } catch {
                throw error.on(line: index + 1)
            }
        }
        return rules
    }

    /// The lines of `text`, split at each newline scalar: split by Character, a
    /// file with CRLF line ends would be one line ("\r\n" is one Character).
    /// A carriage return left at a line's end is a blank.
    public static func lines(_ text: String) -> [Substring] {
        text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { Substring($0) }
    }

    /// Splits one line into words, as a shell would (see the type's doc).
    public static func words(of line: Substring) throws(FaultRuleError) -> [String] {
        var words: [String] = []
        // By scalar: a quote or a blank followed by a combining mark is one
        // Character, and would not be read as a quote or a blank.
        var word = String.UnicodeScalarView()
        var inWord = false
        var iterator = line.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            switch scalar {
            case " ", "\t", "\r":
                if inWord { words.append(String(word)); word = String.UnicodeScalarView(); inWord = false }
            case "#" where !inWord:
                return words
            case "'":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "'" { closed = true; break }
                    word.append(next)
                }
                if !closed { throw FaultRuleError("a ' without its closing '") }
            case "\"":
                inWord = true
                var closed = false
                while let next = iterator.next() {
                    if next == "\"" { closed = true; break }
                    if next == "\\" {
                        guard let escaped = iterator.next() else { break }
                        if escaped != "\"" && escaped != "\\" { word.append("\\") }
                        word.append(escaped)
                    } else {
                        word.append(next)
                    }
                }
                if !closed { throw FaultRuleError("a \" without its closing \"") }
            case "\\":
                guard let escaped = iterator.next() else { throw FaultRuleError("'\\' at the end of the line") }
                inWord = true
                word.append(escaped)
            default:
                inWord = true
                word.append(scalar)
            }
        }
        if inWord { words.append(String(word)) }
        return words
    }

    /// `word` as `words(of:)` reads it back: bare when it is plain, else in single quotes.
    public static func quoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-_./=:,+@%".unicodeScalars.contains(scalar))
                && scalar.isASCII
        }
        if plain { return word }
        var text = "'"
        for scalar in word.unicodeScalars {
            text += scalar == "'" ? "'\\''" : String(scalar)
        }
        return text + "'"
    }
}
