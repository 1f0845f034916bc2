import Glibc
import PurgeCore
import PurgeSys

/// One self-contained HTML page: the style inline, the graphics inline SVG
/// drawn by the pages' own code (`TimelinePage`, `StoragePage`,
/// `ExplorePage`), no network, no external script, style or font, so the
/// file opens from disk or a CI artifact in any browser. The data the page
/// shows is embedded as JSON (`<script type="application/json"
/// id="purgefs-data">`): the page is a view of its report.
///
/// Colours are CSS variables, light by default and dark when the browser
/// asks for it (`prefers-color-scheme`).
public struct HTMLPage {
    var title: String
    var body: String
    /// The report the page draws, embedded for whoever wants the numbers.
    var data: JSONValue?
    /// Extra script (inline), for pages that do something on a click.
    var script: String = ""

    var text: String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="color-scheme" content="light dark">
            <title>\(Self.escape(title))</title>
            <style>\(Self.style)</style>
            </head><body>
            \(body)

            """
        if let data {
            page += "<script type=\"application/json\" id=\"purgefs-data\">\(Self.scriptSafe(data.compact))</script>\n"
        }
        if !script.isEmpty { page += "<script>\(script)</script>\n" }
        page += "</body></html>\n"
        return page
    }

    /// Writes the page to `path` (created or replaced, 0644).
    public func write(to path: String) throws(Errno) {
        let file = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        defer { file.closeQuietly() }
        try file.writeAll(text)
    }

    /// `text` for an element's content or an attribute's value.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// JSON inside `<script>`: every `<` is written `\u003c`, which means the
    /// same inside a JSON string (JSON has no other place for one), so no
    /// `</script`, `<!--` or `<script` can end or change the element.
    static func scriptSafe(_ json: String) -> String {
        var result = ""
        for character in json {
            if character == "<" { result += "\\u003c" } else { result.append(character) }
        }
        return result
    }

    /// A number for SVG coordinates: two decimals at most, no exponent; within
    /// ±10^12 (a report's figures, which the user gives, may put a point anywhere).
    static func coordinate(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let hundredths = (min(max(value, -1e12), 1e12) * 100).rounded()
        let sign = hundredths < 0 ? "-" : ""
        let magnitude = UInt64(abs(hundredths))
        let whole = magnitude / 100, fraction = magnitude % 100
        if fraction == 0 { return sign + String(whole) }
        return sign + String(whole) + "." + (fraction < 10 ? "0" : "") + String(fraction).trimmingTrailingZeros
    }

    /// The page's whole style sheet. Category colours are shared by every page.
    static let style = """
        :root{--bg:#f2f2f7;--card:#fff;--fg:#1c1c1e;--dim:#6e6e73;--line:#d1d1d6;--grid:#e5e5ea;
        --app:#0a84ff;--docs:#ff9f0a;--data:#5e5ce6;--caches:#8e8e93;--tmp:#a2845e;--cloud:#64d2ff;--clones:#30d158;
        --other:#c7c7cc;--free:#e5e5ea;--bundle:#bf5af2;--bad:#ff3b30;--good:#34c759;--mark:#ff375f;--fault:#ff9f0a;--crash:#af52de;
        --step:#0a84ff;--purge:#30b0c7;--enospc:#ff3b30}
        @media (prefers-color-scheme:dark){:root{--bg:#000;--card:#1c1c1e;--fg:#f2f2f7;--dim:#98989d;--line:#38383a;--grid:#2c2c2e;
        --other:#636366;--free:#3a3a3c;--caches:#aeaeb2}}
        *{box-sizing:border-box}
        body{margin:0;padding:24px;background:var(--bg);color:var(--fg);font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:13px;font-weight:600;color:var(--dim);text-transform:uppercase;margin:24px 0 8px}.card>h2:first-child{margin-top:0}
        .card{background:var(--card);border-radius:12px;padding:16px;margin:0 0 16px;max-width:980px}
        .dim{color:var(--dim)}.num{font-variant-numeric:tabular-nums;text-align:right}
        table{border-collapse:collapse;width:100%}td,th{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
        th{font-weight:600;color:var(--dim)}
        .legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 0;padding:0;list-style:none}
        .legend li{display:flex;align-items:center;gap:6px}.swatch{width:10px;height:10px;border-radius:50%;display:inline-block}
        .app-row{display:flex;width:100%;align-items:center;gap:12px;padding:8px 0;border-bottom:1px solid var(--line)}
        .icon{width:40px;height:40px;flex:none}.app-name{flex:1;min-width:0;overflow-wrap:anywhere}
        details{margin:4px 0}summary{cursor:pointer}details.app>summary{list-style:none}details.app>summary::-webkit-details-marker{display:none}
        svg text{fill:var(--fg);font:11px system-ui,sans-serif}svg .axis{stroke:var(--line)}svg .gridline{stroke:var(--grid)}
        .c-app{fill:var(--app)}.c-documents{fill:var(--docs)}.c-data{fill:var(--data)}.c-caches{fill:var(--caches)}
        .c-tmp{fill:var(--tmp)}.c-cloud{fill:var(--cloud)}.c-clones{fill:url(#stripes)}.c-other{fill:var(--other)}.c-free{fill:var(--free)}
        .c-bundle{fill:var(--bundle)}
        .s-device{stroke:var(--data)}.s-container{stroke:var(--app)}.s-purgeable{stroke:var(--caches)}.s-available{stroke:var(--good)}
        .series{fill:none;stroke-width:2}.threshold{stroke-dasharray:6 4;stroke-width:1}.t-low{stroke:var(--bad)}.t-high{stroke:var(--docs)}
        .mark line{stroke-width:1.5;stroke-dasharray:3 3}.mark path{stroke:none}
        .k-step line{stroke:var(--step)}.k-step path{fill:var(--step)}.k-purge line{stroke:var(--purge)}.k-purge path{fill:var(--purge)}
        .k-enospc line{stroke:var(--enospc)}.k-enospc path{fill:var(--enospc)}.k-fault line{stroke:var(--fault)}.k-fault path{fill:var(--fault)}
        .k-crash line{stroke:var(--crash)}.k-crash path{fill:var(--crash)}
        .state{stroke:var(--card);stroke-width:1}.state.passed{fill:var(--good)}.state.failed{fill:var(--bad);cursor:pointer}
        .state.unknown{fill:var(--other)}
        .controls{display:grid;grid-template-columns:max-content 1fr;gap:8px 12px;align-items:center}
        .controls input[type=text]{width:60%}.controls input[type=range]{width:100%}
        button{font:inherit;padding:4px 12px;border-radius:8px;border:1px solid var(--line);background:var(--card);color:var(--fg);cursor:pointer}
        #status{min-height:1.4em}
        """

    /// The SVG `<defs>` every picture may use: the stripes of clone savings.
    static let definitions = """
        <defs><pattern id="stripes" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
        <rect width="6" height="6" fill="var(--free)"/><rect width="3" height="6" fill="var(--clones)"/></pattern></defs>
        """
}

extension JSONValue {
    /// On one line, without spaces: what a page embeds.
    var compact: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .number(let text): return text
        case .string(let text): return JSONText.quoted(text)
        case .array(let items): return "[" + items.map(\.compact).joined(separator: ",") + "]"
        case .object(let fields): return "{" + fields.map { JSONText.quoted($0.0) + ":" + $0.1.compact }.joined(separator: ",") + "}"
        }
    }
}

private extension String {
    var trimmingTrailingZeros: String {
        var text = self
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }
}
