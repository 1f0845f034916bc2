/// What PurgeKit's `MetricManager` has delivered, app by app, kept in the
/// state directory (`metrics-delivered`), and the requests of `purgefs
/// metrics --deliver` (`metrics-deliver`): MetricKit delivers each day's
/// report once per app, and Xcode's "Simulate MetricKit Payloads" makes it
/// deliver one at once.
///
/// Days are delivered oldest first, so one day per app says what was:
/// every complete day up to and including it. A request is a number that
/// each `--deliver` raises by one; an app serves every request above the
/// last one it served (one made before the app started included), with a
/// report of today so far, which does not count as today's delivery.
public struct MetricsDeliveries: Equatable, Sendable {
    public static let fileName = "metrics-delivered"
    public static let requestFileName = "metrics-deliver"
    /// The `flock` both the managers and `--deliver` take around a change
    /// of the book or the request: one name, or they would not exclude each other.
    public static let lockFileName = fileName + ".lock"

    public struct App: Equatable, Sendable {
        /// Midnight UTC starting the last day delivered; nil before the first.
        public var deliveredThrough: Int64?
        /// The last request served.
        public var servedRequest: UInt64

        public init(deliveredThrough: Int64? = nil, servedRequest: UInt64 = 0) {
            self.deliveredThrough = deliveredThrough
            self.servedRequest = servedRequest
        }
    }

    public var apps: [String: App] = [:]

    public init() {}

    /// The days of `days` (oldest first) that are complete at `now` and
    /// after `deliveredThrough`: what is due.
    public static func due(_ days: [MetricsDay], after deliveredThrough: Int64?, now: Int64) -> [MetricsDay] {
        days.filter { $0.isComplete(now: now) && $0.start > (deliveredThrough ?? Int64.min) }
    }

    /// An app's name as a line can hold it (no tab, no newline).
    public static func name(_ app: String) -> String {
        String(app.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? "_" : $0 })
    }

    /// Lines of `APP<tab>DAY<tab>REQUEST`, DAY `-` before the first delivery.
    public var encoded: String {
        apps.keys.sorted().map { name in
            let app = apps[name]!
            return "\(name)\t\(app.deliveredThrough.map(String.init) ?? "-")\t\(app.servedRequest)\n"
        }.joined()
    }

    /// Parses the file; nil when a line is malformed.
    public init?(decoding text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty, let served = UInt64(fields[2]) else { return nil }
            let day: Int64?
            if fields[1] == "-" { day = nil } else {
                guard let value = Int64(fields[1]) else { return nil }
                day = value
            }
            apps[String(fields[0])] = App(deliveredThrough: day, servedRequest: served)
        }
    }

    /// The request number the request file holds (0 when empty or malformed).
    public static func request(decoding text: String) -> UInt64 {
        UInt64(text.trimmingWhitespace()) ?? 0
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> Substring {
        var text = Substring(self)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
