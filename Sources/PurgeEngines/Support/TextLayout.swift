/// Plain-text layout for help: a term and its description in two columns,
/// wrapped to 80 characters.
public enum TextLayout {
    static let width = 80

    /// `  term    description...` with the description wrapped and indented
    /// under itself; a term too long for its column gets a line of its own.
    public static func row(_ term: String, _ description: String, column: Int = 24) -> String {
        row(term, paragraphs: [description], column: column)
    }

    /// A row whose description is several paragraphs, each starting on a line of its own.
    public static func row(_ term: String, paragraphs: [String], column: Int = 24) -> String {
        let lines = paragraphs.flatMap { wrap($0, width: width - column) }
        let head = "  " + term
        var result: [String] = []
        if head.count + 2 > column {
            result.append(head)
            result += lines.map { String(repeating: " ", count: column) + $0 }
        } else {
            let padding = String(repeating: " ", count: column - head.count)
            result.append(head + padding + (lines.first ?? ""))
            result += lines.dropFirst().map { String(repeating: " ", count: column) + $0 }
        }
        return result.joined(separator: "\n")
    }

    /// Words joined into lines of at most `width` characters.
    static func wrap(_ text: String, width: Int = width) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// A paragraph wrapped and indented by `indent` spaces.
    public static func indented(_ text: String, by indent: Int = 2) -> String {
        wrap(text, width: width - indent).map { String(repeating: " ", count: indent) + $0 }.joined(separator: "\n")
    }

    /// A paragraph wrapped to the full width.
    public static func paragraph(_ text: String) -> String { wrap(text).joined(separator: "\n") }
}
