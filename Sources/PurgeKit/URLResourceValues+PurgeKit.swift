import Foundation
import Synchronization

/// The resource keys and values of Apple's Foundation that Foundation on
/// Linux does not declare. (It does declare the ubiquitous keys,
/// `isExcludedFromBackupKey`, `volumeTotalCapacityKey`,
/// `volumeAvailableCapacityKey` and their `URLResourceValues` properties, but
/// answers nil for all but the two capacities.)
extension URLResourceKey {
    /// What can still be stored for something the person asked for: on a
    /// purgefs mount `user.purgefs.available_important` (available + purgeable).
    public static let volumeAvailableCapacityForImportantUsageKey =
        URLResourceKey(rawValue: "NSURLVolumeAvailableCapacityForImportantUsageKey")
    /// What can be stored for something the app may do without: on a purgefs
    /// mount `user.purgefs.available_opportunistic` (available − the low mark).
    public static let volumeAvailableCapacityForOpportunisticUsageKey =
        URLResourceKey(rawValue: "NSURLVolumeAvailableCapacityForOpportunisticUsageKey")
}

/// Whether a ubiquitous item's data is here, and current.
public struct URLUbiquitousItemDownloadingStatus: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The data is here and the newest known (`download_status` `current`).
    public static let current = URLUbiquitousItemDownloadingStatus(rawValue: "NSURLUbiquitousItemDownloadingStatusCurrent")
    /// The data is here but older than the remote's (`downloaded`).
    public static let downloaded = URLUbiquitousItemDownloadingStatus(rawValue: "NSURLUbiquitousItemDownloadingStatusDownloaded")
    /// Evicted: listed, its data not here (`not_downloaded`).
    public static let notDownloaded = URLUbiquitousItemDownloadingStatus(rawValue: "NSURLUbiquitousItemDownloadingStatusNotDownloaded")

    /// The status `user.purgefs.download_status` names.
    init?(attribute text: String) {
        switch text {
        case "current": self = .current
        case "downloaded": self = .downloaded
        case "not_downloaded": self = .notDownloaded
        default: return nil
        }
    }
}

extension URLResourceValues {
    public var volumeAvailableCapacityForImportantUsage: Int64? {
        allValues[.volumeAvailableCapacityForImportantUsageKey] as? Int64
    }

    public var volumeAvailableCapacityForOpportunisticUsage: Int64? {
        allValues[.volumeAvailableCapacityForOpportunisticUsageKey] as? Int64
    }

    public var ubiquitousItemDownloadingStatus: URLUbiquitousItemDownloadingStatus? {
        allValues[.ubiquitousItemDownloadingStatusKey] as? URLUbiquitousItemDownloadingStatus
    }
}

/// Building a `URLResourceValues` that holds values Foundation did not fetch.
///
/// Foundation gives no public way: its initializer with values is private,
/// its read-only properties (`ubiquitousItemIsUploaded`, ...) read its
/// private dictionary, and on Linux neither temporary resource values nor an
/// `NSURL` subclass reach it (the first are dropped, the second recurses in
/// `NSURL._cfObject`). So the value is rebuilt with Foundation's own layout,
/// two stored properties `_values` and `_keys`, checked against what the
/// running Foundation reflects before it is relied on. Should a Foundation
/// ever lay it out otherwise, Foundation's answer is returned unchanged and
/// one line says so on stderr: never a crash.
enum ResourceValuesLayout {
    /// The layout PurgeKit writes, field for field Foundation's.
    private struct Mirrored {
        var values: [URLResourceKey: Any]
        var keys: Set<URLResourceKey>
    }

    /// Whether the running Foundation's `URLResourceValues` is laid out as `Mirrored`.
    static let matches: Bool = {
        let children = Mirror(reflecting: URLResourceValues()).children.map { ($0.label, type(of: $0.value)) }
        return children.count == 2
            && children[0].0 == "_values" && children[0].1 == [URLResourceKey: Any].self
            && children[1].0 == "_keys" && children[1].1 == Set<URLResourceKey>.self
            && MemoryLayout<URLResourceValues>.size == MemoryLayout<Mirrored>.size
            && MemoryLayout<URLResourceValues>.alignment == MemoryLayout<Mirrored>.alignment
    }()

    private static let warned = Atomic<Bool>(false)

    /// `base` with `answers` added (replacing Foundation's for the same keys).
    static func merging(_ base: URLResourceValues, _ answers: [URLResourceKey: Any]) -> URLResourceValues {
        guard !answers.isEmpty else { return base }
        guard matches else {
            if !warned.exchange(true, ordering: .relaxed) {
                FileHandleOutput.standardError("PurgeKit: this Foundation's URLResourceValues is laid out differently; "
                    + "resource values are Foundation's alone")
            }
            return base
        }
        var values = base.allValues
        for (key, value) in answers { values[key] = value }
        let keys = Set(values.keys)
        return unsafeBitCast(Mirrored(values: values, keys: keys), to: URLResourceValues.self)
    }
}

enum FileHandleOutput {
    static func standardError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
