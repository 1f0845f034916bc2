import PurgeCore

/// Settings > General > Storage as a page (`purgefs usage --html`, and the
/// live `purgefs ui`): the device's bar by category, the apps (containers)
/// by size with their initials as icons, and each app's breakdown with its
/// purgeable part. Built from the same reports `usage --json` prints
/// (`UsageReport`, `DeviceUsageReport`), so the bar's segments are those
/// figures: every segment carries its bytes (`data-bytes`) and is as wide
/// as its share of the capacity, exactly (no minimum width).
public struct StoragePage: Equatable {
    /// One category of the device bar.
    struct Segment: Equatable {
        /// `app`, `caches`, `cloud`, `other`, `free`: the CSS class `c-ID`.
        var id: String
        var label: String
        var bytes: UInt64
    }

    /// One part of an app's breakdown.
    struct Part: Equatable {
        /// `bundle`, `documents`, `data`, `caches`, `tmp`.
        var id: String
        var label: String
        var bytes: UInt64
        var purgeable: UInt64
    }

    struct App: Equatable {
        var name: String
        var detail: String
        /// Bytes on disk.
        var size: UInt64
        var purgeable: UInt64
        var parts: [Part]
    }

    var title: String
    var subtitle: String
    var capacity: UInt64
    /// In bar order; their bytes add up to the capacity (or less, the rest
    /// is left blank) on a simulated device.
    var segments: [Segment]
    /// Bytes not stored thanks to clones: drawn striped over the start of the free segment.
    var cloneSavings: UInt64
    var apps: [App]
    /// The report the page was made from (`usage --json`'s object).
    var data: JSONValue

    /// The bar's width in its own units (its viewBox); drawn as wide as its
    /// card, a segment's width on the page is its share of the bar's.
    static let barWidth = 720.0
    static let barHeight = 28.0

    // MARK: From the reports

    /// One mount (or a directory in it): the device's bar around the
    /// directory, and the directory as the one app.
    public init(_ report: UsageReport) {
        let figures = report.directory
        let appData = figures.allocated.clampedMinus(figures.purgeable).clampedMinus(report.cloudEvictable)
        title = "Storage"
        subtitle = report.path == report.mountpoint ? report.path : "\(report.path) (in the purgefs mount at \(report.mountpoint))"
        capacity = report.device.capacity
        segments = Self.deviceSegments(appData: appData, caches: figures.purgeable, cloud: report.cloudEvictable,
                                       other: report.device.deviceUsed.clampedMinus(figures.allocated),
                                       free: report.device.available)
        cloneSavings = figures.cloneSavings
        apps = [Self.app(named: Self.lastComponent(report.path), detail: report.path, report)]
        data = report.json
    }

    /// A shared device: every container is an app; `members` holds the
    /// breakdown of those whose mount could be read (by mount point).
    public init(_ device: DeviceUsageReport, members: [String: UsageReport]) {
        var appData: UInt64 = 0, caches: UInt64 = 0, cloud: UInt64 = 0, savings: UInt64 = 0
        var apps: [App] = []
        for container in device.containers {
            let member = members[container.mountpoint]
            let evictable = member?.cloudEvictable ?? 0
            appData += container.used.clampedMinus(container.purgeable).clampedMinus(evictable)
            caches += container.purgeable
            cloud += evictable
            savings += member?.directory.cloneSavings ?? 0
            if let member {
                var app = Self.app(named: Self.lastComponent(container.container), detail: container.container, member)
                app.size = container.used
                app.purgeable = container.purgeable
                apps.append(app)
            } else {
                apps.append(App(name: Self.lastComponent(container.container), detail: container.container + " (not readable)",
                                size: container.used, purgeable: container.purgeable, parts: []))
            }
        }
        title = "Storage of device \(device.name)"
        subtitle = "\(device.containers.count) container\(device.containers.count == 1 ? "" : "s"), policy \(device.policy.rawValue)"
            + (device.simulated ? ", simulated" : "")
        capacity = device.capacity
        segments = Self.deviceSegments(appData: appData, caches: caches, cloud: cloud, other: device.external, free: device.available)
        cloneSavings = savings
        self.apps = apps
        var json = device.json
        if case .object(var fields) = json {
            fields.append(("members", .object(members.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) })))
            json = .object(fields)
        }
        data = json
    }

    static func deviceSegments(appData: UInt64, caches: UInt64, cloud: UInt64, other: UInt64, free: UInt64) -> [Segment] {
        [Segment(id: "app", label: "Apps' data", bytes: appData),
         Segment(id: "caches", label: "Caches (purgeable)", bytes: caches),
         Segment(id: "cloud", label: "Cloud (evictable)", bytes: cloud),
         Segment(id: "other", label: "Other", bytes: other),
         Segment(id: "free", label: "Free", bytes: free)]
    }

    private static func app(named name: String, detail: String, _ report: UsageReport) -> App {
        var parts: [Part] = []
        if let bundle = report.app { parts.append(Part(id: "bundle", label: "App", bytes: bundle, purgeable: 0)) }
        parts.append(Part(id: "documents", label: "Documents", bytes: report.documents, purgeable: 0))
        parts.append(Part(id: "data", label: "Data", bytes: report.otherData, purgeable: 0))
        let caches = report.zones.filter { $0.path != "tmp" }, temporary = report.zones.filter { $0.path == "tmp" }
        parts.append(Part(id: "caches", label: "Caches", bytes: caches.reduce(0) { $0 + $1.size },
                          purgeable: caches.reduce(0) { $0 + $1.purgeable }))
        parts.append(Part(id: "tmp", label: "Temporary", bytes: temporary.reduce(0) { $0 + $1.size },
                          purgeable: temporary.reduce(0) { $0 + $1.purgeable }))
        return App(name: name, detail: detail, size: report.directory.allocated, purgeable: report.directory.purgeable, parts: parts)
    }

    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Up to two letters: the first of the first two words (`my-app` → `MA`), else the name's first two.
    static func initials(_ name: String) -> String {
        let words = name.split { !$0.isLetter && !$0.isNumber }
        let letters = words.count >= 2 ? [words[0].first!, words[1].first!] : Array((words.first ?? Substring(name)).prefix(2))
        return String(letters).uppercased()
    }

    /// The icon's colour: one of the category colours, the same for the same name.
    static func iconColour(_ name: String) -> String {
        let colours = ["--app", "--docs", "--data", "--clones", "--bundle", "--purge", "--mark", "--tmp"]
        let hash = name.utf8.reduce(UInt32(2166136261)) { ($0 ^ UInt32($1)) &* 16777619 }
        return colours[Int(hash % UInt32(colours.count))]
    }

    // MARK: Drawing

    /// The page's content: what `usage --html` writes inside `<body>`, and
    /// what `ui` sends on each refresh.
    var body: String {
        var html = "<div class=\"card\" id=\"device\"><h1>\(HTMLPage.escape(title))</h1>"
        html += "<div class=\"dim\">\(HTMLPage.escape(subtitle))</div>"
        let used = capacity.clampedMinus(segments.first { $0.id == "free" }?.bytes ?? 0)
        html += "<p><b>\(HTMLPage.escape(HumanText.size(used)))</b> of \(HTMLPage.escape(HumanText.size(capacity))) used</p>"
        html += bar
        html += "<ul class=\"legend\">"
        for segment in segments {
            html += "<li><span class=\"swatch\" style=\"background:var(--\(Self.variable(segment.id)))\"></span>"
                + "\(HTMLPage.escape(segment.label)) <span class=\"dim\">\(HTMLPage.escape(HumanText.size(segment.bytes)))</span></li>"
        }
        html += "<li><span class=\"swatch\" style=\"background:var(--clones)\"></span>Saved by clones "
            + "<span class=\"dim\">\(HTMLPage.escape(HumanText.size(cloneSavings)))</span></li></ul></div>"
        html += "<div class=\"card\" id=\"apps\"><h2>Apps</h2>"
        for (index, app) in apps.sorted(by: { ($0.size, $1.name) > ($1.size, $0.name) }).enumerated() {
            html += appRow(app, index: index)
        }
        html += "</div>"
        return html
    }

    public var page: HTMLPage { HTMLPage(title: title, body: body, data: data) }

    /// The bar, its legend and the first app's parts, under `heading`: a
    /// run's storage at its start or end.
    func card(heading: String, id: String) -> String {
        var html = "<div class=\"card\" id=\"\(HTMLPage.escape(id))\"><h2>\(HTMLPage.escape(heading))</h2>" + bar
            + "<ul class=\"legend\">"
        for segment in segments {
            html += "<li><span class=\"swatch\" style=\"background:var(--\(Self.variable(segment.id)))\"></span>"
                + "\(HTMLPage.escape(segment.label)) <span class=\"dim\">\(HTMLPage.escape(HumanText.size(segment.bytes)))</span></li>"
        }
        html += "</ul>"
        if let app = apps.first, !app.parts.isEmpty {
            html += "<table class=\"parts\"><tr><th>Part</th><th class=\"num\">Size</th><th class=\"num\">Purgeable</th></tr>"
            for part in app.parts {
                html += "<tr data-part=\"\(part.id)\" data-bytes=\"\(part.bytes)\"><td>\(HTMLPage.escape(part.label))</td>"
                    + "<td class=\"num\">\(HTMLPage.escape(HumanText.size(part.bytes)))</td>"
                    + "<td class=\"num\">\(part.purgeable > 0 ? HTMLPage.escape(HumanText.size(part.purgeable)) : "")</td></tr>"
            }
            html += "</table>"
        }
        return html + "</div>"
    }

    private static func variable(_ id: String) -> String {
        switch id {
        case "documents": return "docs"
        case "cloud": return "cloud"
        default: return id
        }
    }

    /// The device bar: one `<rect class="segment c-ID" data-bytes=N>` per category.
    var bar: String {
        let width = Self.barWidth, height = Self.barHeight
        var svg = "<svg class=\"device-bar\" width=\"100%\" height=\"\(HTMLPage.coordinate(height))\" preserveAspectRatio=\"none\" "
            + "viewBox=\"0 0 \(HTMLPage.coordinate(width)) \(HTMLPage.coordinate(height))\" role=\"img\" "
            + "aria-label=\"the device's space by category\" data-capacity=\"\(capacity)\">" + HTMLPage.definitions
        svg += "<rect x=\"0\" y=\"0\" width=\"\(HTMLPage.coordinate(width))\" height=\"\(HTMLPage.coordinate(height))\" rx=\"6\" fill=\"var(--grid)\"/>"
        var x = 0.0
        let total = Double(max(capacity, segments.reduce(0) { $0 + $1.bytes }, 1))
        for segment in segments {
            let share = Double(segment.bytes) / total * width
            svg += "<rect class=\"segment c-\(segment.id)\" data-category=\"\(segment.id)\" data-bytes=\"\(segment.bytes)\" "
                + "x=\"\(HTMLPage.coordinate(x))\" y=\"0\" width=\"\(HTMLPage.coordinate(share))\" height=\"\(HTMLPage.coordinate(height))\">"
                + "<title>\(HTMLPage.escape(segment.label)): \(HTMLPage.escape(HumanText.size(segment.bytes)))</title></rect>"
            if segment.id == "free", cloneSavings > 0 {
                let saved = Double(min(cloneSavings, segment.bytes)) / total * width
                svg += "<rect class=\"segment-overlay c-clones\" data-category=\"clones\" data-bytes=\"\(cloneSavings)\" "
                    + "x=\"\(HTMLPage.coordinate(x))\" y=\"0\" width=\"\(HTMLPage.coordinate(saved))\" height=\"\(HTMLPage.coordinate(height))\">"
                    + "<title>Saved by clones: \(HTMLPage.escape(HumanText.size(cloneSavings))) (free because of clones)</title></rect>"
            }
            x += share
        }
        return svg + "</svg>"
    }

    private func appRow(_ app: App, index: Int) -> String {
        let initials = HTMLPage.escape(Self.initials(app.name))
        var html = "<details class=\"app\" data-app=\"\(HTMLPage.escape(app.name))\" data-bytes=\"\(app.size)\"\(index == 0 ? " open" : "")>"
        html += "<summary><div class=\"app-row\">"
        html += "<svg class=\"icon\" viewBox=\"0 0 40 40\" aria-hidden=\"true\"><rect width=\"40\" height=\"40\" rx=\"9\" "
            + "fill=\"var(\(Self.iconColour(app.name)))\"/><text x=\"20\" y=\"25\" text-anchor=\"middle\" "
            + "style=\"fill:#fff;font:600 15px system-ui,sans-serif\">\(initials)</text></svg>"
        html += "<div class=\"app-name\"><b>\(HTMLPage.escape(app.name))</b><br><span class=\"dim\">\(HTMLPage.escape(app.detail))</span></div>"
        html += "<div class=\"num\"><b>\(HTMLPage.escape(HumanText.size(app.size)))</b><br>"
            + "<span class=\"dim\">\(HTMLPage.escape(HumanText.size(app.purgeable))) purgeable</span></div></div></summary>"
        if !app.parts.isEmpty {
            html += partsBar(app)
            html += "<table class=\"parts\"><tr><th>Part</th><th class=\"num\">Size</th><th class=\"num\">Purgeable</th></tr>"
            for part in app.parts {
                html += "<tr data-part=\"\(part.id)\" data-bytes=\"\(part.bytes)\" data-purgeable=\"\(part.purgeable)\">"
                    + "<td><span class=\"swatch\" style=\"background:var(--\(Self.variable(part.id)))\"></span> \(HTMLPage.escape(part.label))</td>"
                    + "<td class=\"num\">\(HTMLPage.escape(HumanText.size(part.bytes)))</td>"
                    + "<td class=\"num\">\(part.purgeable > 0 ? HTMLPage.escape(HumanText.size(part.purgeable)) : "")</td></tr>"
            }
            html += "</table>"
        }
        return html + "</details>"
    }

    /// The app's parts in one bar (logical sizes), the purgeable part of each lighter.
    private func partsBar(_ app: App) -> String {
        let width = Self.barWidth, height = 12.0
        let total = Double(max(app.parts.reduce(0) { $0 + $1.bytes }, 1))
        var svg = "<svg class=\"parts-bar\" width=\"100%\" height=\"\(HTMLPage.coordinate(height))\" preserveAspectRatio=\"none\" "
            + "viewBox=\"0 0 \(HTMLPage.coordinate(width)) \(HTMLPage.coordinate(height))\" role=\"img\" aria-label=\"the app's parts\">"
        svg += "<rect width=\"\(HTMLPage.coordinate(width))\" height=\"\(HTMLPage.coordinate(height))\" rx=\"4\" fill=\"var(--grid)\"/>"
        var x = 0.0
        for part in app.parts where part.bytes > 0 {
            let share = Double(part.bytes) / total * width
            let purgeable = Double(min(part.purgeable, part.bytes)) / total * width
            svg += "<rect class=\"c-\(part.id)\" x=\"\(HTMLPage.coordinate(x))\" width=\"\(HTMLPage.coordinate(share))\" "
                + "height=\"\(HTMLPage.coordinate(height))\"><title>\(HTMLPage.escape(part.label)): \(HTMLPage.escape(HumanText.size(part.bytes)))"
                + "\(part.purgeable > 0 ? ", \(HTMLPage.escape(HumanText.size(part.purgeable))) purgeable" : "")</title></rect>"
            if purgeable > 0 {
                svg += "<rect x=\"\(HTMLPage.coordinate(x + share - purgeable))\" width=\"\(HTMLPage.coordinate(purgeable))\" "
                    + "height=\"\(HTMLPage.coordinate(height))\" fill=\"#fff\" fill-opacity=\"0.45\"><title>purgeable: "
                    + "\(HTMLPage.escape(HumanText.size(part.purgeable)))</title></rect>"
            }
            x += share
        }
        return svg + "</svg>"
    }
}
