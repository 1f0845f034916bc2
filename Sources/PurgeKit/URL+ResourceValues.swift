import Foundation
import PurgeCore
import PurgeKitFoundation
import PurgeSys

/// `url.resourceValues(forKeys:)` and `setResourceValues(_:)` as Apple's
/// Foundation answers them, for a file on a purgefs mount: the ubiquitous
/// item's state from the cloud tier, `isExcludedFromBackup` from
/// `user.purgefs.excluded_from_backup`, the volume's capacities from the
/// root's space figures. Everything else, and everything off a mount, is
/// Foundation's answer, errors included (a missing file is its
/// `NSFileReadNoSuchFileError`).
///
/// Each is declared twice. The methods, with Foundation's signatures, answer
/// in a file that imports PurgeKit alone (they shadow Foundation's) and for
/// a reference that names the method without calling it. The properties
/// answer the calls in any file, one that imports Foundation too included:
/// there Swift sees Foundation's method and PurgeKit's directly, shadows
/// neither, and ranks two methods of one signature equal ("ambiguous use"),
/// but it ranks a property above a method of the same name (swift's
/// `compareSolutions`: "a property is better than a method"), and
/// `url.resourceValues(forKeys: keys)` or `url.setResourceValues(values)` is
/// then a call of the property's value.
extension URL {
    public func resourceValues(forKeys keys: Set<URLResourceKey>) throws -> URLResourceValues {
        try ResourceValuesCall(url: self)(forKeys: keys)
    }

    /// The same, for keys written as an array (`[.fileSizeKey]`). Not
    /// Apple's API (it takes a `Set`); kept for code written against
    /// earlier versions of PurgeKit.
    public func resourceValues(forKeys keys: [URLResourceKey]) throws -> URLResourceValues {
        try ResourceValuesCall(url: self)(forKeys: Set(keys))
    }

    public mutating func setResourceValues(_ values: URLResourceValues) throws {
        try Self.setResourceValues(values, of: &self)
    }

    /// What `url.resourceValues(forKeys: keys)` calls: a value with
    /// `callAsFunction(forKeys:)` (a closure's call cannot take the label).
    public var resourceValues: ResourceValuesCall { ResourceValuesCall(url: self) }

    /// What `url.setResourceValues(values)` calls. A closure, so that Swift
    /// weighs it as it weighs Foundation's method (an unlabeled argument of
    /// the same type) and then ranks the property first; a value with
    /// `callAsFunction` would not be weighed, and Foundation's method would
    /// be taken without it. Its getter is `mutating`, as Foundation's method
    /// is: the URL is a variable, and the compiler says nothing of one
    /// never mutated.
    public var setResourceValues: (URLResourceValues) throws -> Void {
        mutating get {
            let url = self
            return { values in
                var url = url
                try URL.setResourceValues(values, of: &url)
            }
        }
    }

    private static func setResourceValues(_ values: URLResourceValues, of url: inout URL) throws {
        if url.isFileURL, let excluded = values.isExcludedFromBackup, PurgeMount.containing(url.path) != nil {
            do {
                try PurgeMount.set(.excludedFromBackup, of: url.path, to: excluded ? "1" : "0")
            } catch {
                throw FileError.cocoa(error, path: url.path, .write)
            }
        }
        try FoundationAnswers.setResourceValues(values, of: &url)
    }
}

/// The value of `url.resourceValues`, called as `url.resourceValues(forKeys:)`.
public struct ResourceValuesCall: Sendable {
    let url: URL

    public func callAsFunction(forKeys keys: Set<URLResourceKey>) throws -> URLResourceValues {
        let foundation = try FoundationAnswers.resourceValues(of: url, forKeys: keys)
        guard url.isFileURL else { return foundation }
        let answers = try PurgeKitAnswers(path: url.path, keys: keys).values()
        return ResourceValuesLayout.merging(foundation, answers)
    }
}

/// The values a mount answers for the keys asked.
private struct PurgeKitAnswers {
    var path: String
    var keys: Set<URLResourceKey>

    static let ubiquitousKeys: Set<URLResourceKey> = [
        .isUbiquitousItemKey, .ubiquitousItemIsUploadedKey, .ubiquitousItemIsUploadingKey,
        .ubiquitousItemDownloadingStatusKey, .ubiquitousItemIsDownloadingKey,
    ]
    static let volumeKeys: Set<URLResourceKey> = [
        .volumeTotalCapacityKey, .volumeAvailableCapacityKey,
        .volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey,
    ]

    func values() throws -> [URLResourceKey: Any] {
        guard !keys.isDisjoint(with: Self.ubiquitousKeys.union(Self.volumeKeys).union([.isExcludedFromBackupKey])) else { return [:] }
        guard let mount = PurgeMount.containing(path) else { return try offMount() }
        var answers: [URLResourceKey: Any] = [:]
        do {
            if !keys.isDisjoint(with: Self.ubiquitousKeys) { try ubiquitous(into: &answers) }
            if keys.contains(.isExcludedFromBackupKey), let excluded = try PurgeMount.flag(.excludedFromBackup, of: path) {
                answers[.isExcludedFromBackupKey] = excluded
            }
            if !keys.isDisjoint(with: Self.volumeKeys) { try volume(of: mount, into: &answers) }
        } catch {
            throw FileError.cocoa(error, path: path, .read)
        }
        return answers
    }

    /// Off a mount: Foundation's answers, and for the two usages (which
    /// Foundation on Linux lacks) its available capacity: nothing there is
    /// purgeable, and no low mark holds space back.
    private func offMount() throws -> [URLResourceKey: Any] {
        let usages: Set<URLResourceKey> = [.volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey]
        guard !keys.isDisjoint(with: usages) else { return [:] }
        let url = URL(fileURLWithPath: path)
        guard let available = try FoundationAnswers.resourceValues(of: url, forKeys: [.volumeAvailableCapacityKey]).volumeAvailableCapacity
        else { return [:] }
        var answers: [URLResourceKey: Any] = [:]
        for key in usages where keys.contains(key) { answers[key] = Int64(available) }
        return answers
    }

    private func ubiquitous(into answers: inout [URLResourceKey: Any]) throws(Errno) {
        // ENODATA: no cloud tier, or not a regular file; EOPNOTSUPP cannot come from a mount.
        guard let ubiquitous = try PurgeMount.flag(.ubiquitous, of: path) else { return }
        if keys.contains(.isUbiquitousItemKey) { answers[.isUbiquitousItemKey] = ubiquitous }
        guard ubiquitous else { return }
        let uploaded = try PurgeMount.flag(.uploaded, of: path) ?? false
        let status = try PurgeMount.text(.downloadStatus, of: path).flatMap(URLUbiquitousItemDownloadingStatus.init(attribute:))
        if keys.contains(.ubiquitousItemIsUploadedKey) { answers[.ubiquitousItemIsUploadedKey] = uploaded }
        // Not uploaded while its data is here: the tier uploads it once it is closed.
        if keys.contains(.ubiquitousItemIsUploadingKey) { answers[.ubiquitousItemIsUploadingKey] = !uploaded && status != .notDownloaded }
        if keys.contains(.ubiquitousItemDownloadingStatusKey), let status { answers[.ubiquitousItemDownloadingStatusKey] = status }
        if keys.contains(.ubiquitousItemIsDownloadingKey) {
            answers[.ubiquitousItemIsDownloadingKey] = DownloadRequests.shared.isDownloading(path, notDownloaded: status == .notDownloaded)
        }
    }

    private func volume(of mount: PurgeMount, into answers: inout [URLResourceKey: Any]) throws(Errno) {
        let root = mount.mountPoint
        if keys.contains(.volumeTotalCapacityKey), let value = try PurgeMount.number(.capacity, of: root) {
            answers[.volumeTotalCapacityKey] = Int(value)
        }
        if keys.contains(.volumeAvailableCapacityKey), let value = try PurgeMount.number(.available, of: root) {
            answers[.volumeAvailableCapacityKey] = Int(value)
        }
        if keys.contains(.volumeAvailableCapacityForImportantUsageKey),
           let value = try PurgeMount.number(.availableImportant, of: root) {
            answers[.volumeAvailableCapacityForImportantUsageKey] = value
        }
        if keys.contains(.volumeAvailableCapacityForOpportunisticUsageKey),
           let value = try PurgeMount.number(.availableOpportunistic, of: root) {
            answers[.volumeAvailableCapacityForOpportunisticUsageKey] = value
        }
    }
}
