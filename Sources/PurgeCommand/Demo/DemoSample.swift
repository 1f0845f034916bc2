import Glibc
import PurgeEngines
import PurgeSys

/// The sample app container the demo mounts, and the numbers the tour is
/// built around: what an iOS app's sandbox holds, with caches of various
/// sizes and ages so that least-recently-used order shows.
///
/// With these files, `purge --bytes 1M` takes the four oldest caches
/// (1084 KiB), and squeezing the device to 5–6 MiB available leaves the
/// monitor less than `high` to win back, so it purges every cache that is
/// left and a write into Documents then gets `ENOSPC`.
enum DemoSample {
    struct File: Equatable {
        /// Relative to the container.
        var path: String
        var size: Int
        /// How long ago it was last used (its mtime and atime), in seconds.
        var age: Int64
        /// Its content when it is text; otherwise `size` bytes of noise.
        var text: String?
    }

    static let minute: Int64 = 60, hour: Int64 = 3600, day: Int64 = 86400

    static let files: [File] = [
        File(path: "Documents/notes.txt", size: 0, age: 2 * hour, text: "Groceries: oat milk, lemons, coffee\n"),
        File(path: "Documents/report.pdf", size: 300 << 10, age: 3 * day),
        File(path: "Documents/Projects/2024/summer/photo-001.heic", size: 1 << 20, age: 120 * day),
        File(path: "Documents/Projects/2024/summer/photo-002.heic", size: 2 << 20, age: 120 * day),
        File(path: "Library/Preferences/com.example.app.json", size: 0, age: 1 * hour,
             text: "{\"theme\": \"dark\", \"launches\": 42}\n"),
        File(path: "Library/Caches/thumbnails/t-0001.jpg", size: 16 << 10, age: 30 * day),
        File(path: "Library/Caches/thumbnails/t-0002.jpg", size: 48 << 10, age: 21 * day),
        File(path: "Library/Caches/feed/page-1.json", size: 120 << 10, age: 9 * day),
        File(path: "Library/Caches/feed/page-2.json", size: 900 << 10, age: 6 * day),
        File(path: "Library/Caches/video/clip.mp4", size: 2 << 20, age: 3 * hour),
        File(path: "tmp/download.part", size: 1 << 20, age: 2 * day),
        File(path: "tmp/upload-queue.db", size: 64 << 10, age: 10 * minute),
    ]

    /// The purgeable zones the demo shows (the mount's defaults that exist here).
    static let zones = ["Library/Caches", "tmp"]

    /// A user xattr set on the container itself, which the mount passes through.
    static let taggedFile = "Documents/notes.txt"
    static let tag = (name: "user.demo.tag", value: "shopping list")

    /// The simulated device.
    static let capacity: UInt64 = 64 << 20
    static let low: UInt64 = 8 << 20
    static let high: UInt64 = 10 << 20
    static var mountOptions: String { "capacity=\(capacity >> 20)M,low=\(low >> 20)M,high=\(high >> 20)M" }

    /// What the manual purge asks for.
    static let manualPurge = "1M"

    /// How much to leave available when squeezing: below `low`, so the monitor purges.
    static let squeezedAvailable: UInt64 = 5 << 20

    /// A capacity in whole MiB that leaves between `squeezedAvailable` and
    /// 1 MiB more available, given the device now: everything in use
    /// (capacity − available) stays, the rest shrinks.
    static func squeezedCapacity(capacity: UInt64, available: UInt64) -> UInt64 {
        let inUse = capacity.clampedMinus(available)
        let mebibyte: UInt64 = 1 << 20
        return (inUse + squeezedAvailable + mebibyte - 1) / mebibyte * mebibyte
    }

    /// Writes the sample into the empty directory `container`, with each
    /// file's times set `age` before `now` (seconds since the epoch).
    static func create(in container: String, now: Int64) throws(CommandExit) {
        var made: Set<String> = []
        for file in files {
            var directory = ""
            for component in file.path.split(separator: "/").dropLast() {
                directory += (directory.isEmpty ? "" : "/") + component
                guard made.insert(directory).inserted else { continue }
                do throws(Errno) {
                    try Paths.makeDirectory(container + "/" + directory)
                } catch {
                    throw .failure("demo: cannot create \(container)/\(directory): \(error)")
                }
            }
            try write(file, to: container + "/" + file.path, time: now - file.age)
        }
        do throws(Errno) {
            try Paths.setExtendedAttribute(tag.name, of: container + "/" + taggedFile, to: Array(tag.value.utf8))
        } catch {
            throw .failure("demo: cannot set \(tag.name) on \(container)/\(taggedFile): \(error)")
        }
    }

    private static func write(_ file: File, to path: String, time: Int64) throws(CommandExit) {
        do throws(Errno) {
            let descriptor = try FileDescriptor.open(path: path, flags: O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o644)
            do throws(Errno) {
                if let text = file.text {
                    try descriptor.writeAll(text)
                } else {
                    try writeNoise(file.size, seed: UInt64(file.path.utf8.count * 7919 + file.size) | 1, to: descriptor)
                }
                let stamp = timespec(tv_sec: Int(time), tv_nsec: 0)
                try descriptor.setTimes(access: stamp, modification: stamp)
            } catch {
                descriptor.closeQuietly()
                throw error
            }
            try descriptor.close()
        } catch {
            throw .failure("demo: cannot write \(path): \(error)")
        }
    }

    /// `count` bytes that do not compress, from a xorshift generator.
    private static func writeNoise(_ count: Int, seed: UInt64, to descriptor: FileDescriptor) throws(Errno) {
        var state = seed
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var left = count
        while left > 0 {
            let length = min(left, chunk.count)
            for index in stride(from: 0, to: length, by: 8) {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                withUnsafeBytes(of: state) { word in
                    for offset in 0..<min(8, length - index) { chunk[index + offset] = word[offset] }
                }
            }
            // `withUnsafeBytes` rethrows untyped; carry the `Errno` out in a `Result`.
            try chunk.withUnsafeBytes { bytes in
                Result { () throws(Errno) in try descriptor.writeAll(UnsafeRawBufferPointer(rebasing: bytes[..<length])) }
            }.get()
            left -= length
        }
    }
}
