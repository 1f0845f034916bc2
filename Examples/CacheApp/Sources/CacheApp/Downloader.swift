import Foundation

/// Where the app's files come from. The example serves them from memory;
/// a real app would use URLSession.
public protocol Downloader: Sendable {
    func download(_ key: String) throws -> Data
}

/// A server that answers every key with the same bytes each time (its
/// length from the key: `photo-3` is 3 × 256 KiB), and counts what it sent.
public final class FakeServer: Downloader, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    public init() {}

    public func download(_ key: String) throws -> Data {
        lock.withLock { counts[key, default: 0] += 1 }
        return Self.content(of: key)
    }

    /// How many times `key` was downloaded.
    public func downloads(of key: String) -> Int {
        lock.withLock { counts[key, default: 0] }
    }

    /// What the server sends for `key`.
    public static func content(of key: String) -> Data {
        let units = Int(key.split(separator: "-").last ?? "1") ?? 1
        let seed = UInt8(truncatingIfNeeded: key.utf8.reduce(0) { $0 &+ Int($1) })
        return Data((0..<(units * 256 * 1024)).map { UInt8(truncatingIfNeeded: $0) &+ seed })
    }
}
