import PurgeEngines
import PurgeSys

/// What `purgefs demo` prints: headings, each command as a user would type
/// it, and what it printed. Written straight to descriptor 1, unbuffered, so
/// the transcript shows as the tour goes and keeps its order with the output
/// of the purgefs children it runs.
struct DemoTranscript {
    /// Where the text goes; the real one writes to stdout and ignores errors
    /// (a closed pipe raises SIGPIPE, which the demo handles between steps).
    var emit: (String) -> Void = { text in try? FileDescriptor.standardOutput.writeAll(text) }

    /// `== title`, after a blank line.
    func heading(_ title: String) {
        emit("\n== \(title)\n")
    }

    /// `$ word word...`, quoted as a shell needs; `redirect` (`> FILE`) is appended as it is.
    func command(_ words: [String], redirect: String? = nil) {
        emit("$ " + Self.shellLine(words) + (redirect.map { " " + $0 } ?? "") + "\n")
    }

    /// Output as it is, ending in a newline; nothing for empty output.
    func output(_ text: String) {
        guard !text.isEmpty else { return }
        emit(text.hasSuffix("\n") ? text : text + "\n")
    }

    /// Lines of output, each indented by two spaces.
    func rows(_ lines: [String]) {
        output(lines.map { "  " + $0 }.joined(separator: "\n"))
    }

    /// A sentence of narration, wrapped at 80 columns.
    func note(_ text: String) {
        emit(TextLayout.paragraph(text) + "\n")
    }

    /// The words as one shell line: a word with anything but
    /// `A-Za-z0-9_./=:,%+-` in it is single-quoted (an empty word too).
    static func shellLine(_ words: [String]) -> String {
        words.map(shellWord).joined(separator: " ")
    }

    static func shellWord(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || "_./=:,%+-".unicodeScalars.contains(scalar)
        }
        return plain ? word : "'" + word.replacingAll("'", with: "'\\''") + "'"
    }
}

extension String {
    /// Every occurrence of `target` replaced (no Foundation here).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var result = ""
        for character in self { if character == target { result += replacement } else { result.append(character) } }
        return result
    }
}
