import Foundation
import PurgeCore
import PurgeSys

/// The purgefs mount a file lives on, and its `user.purgefs.*` attributes:
/// everything PurgeKit knows of a mount, it reads or writes there.
struct PurgeMount: Sendable {
    /// The kernel's mount entry.
    var entry: MountTable.Entry
    var mountPoint: String { entry.mountPoint }

    /// The mount holding `path`, or the nearest existing directory above it
    /// (a file about to be made); nil off a purgefs mount.
    static func containing(_ path: String) -> PurgeMount? {
        var candidate = path
        var canonical: String?
        while canonical == nil {
            canonical = try? Paths.canonical(candidate)
            if canonical == nil {
                let parent = (candidate as NSString).deletingLastPathComponent
                if parent == candidate || parent.isEmpty { return nil }
                candidate = parent
            }
        }
        guard let canonical, let table = try? MountTable.current(), let entry = table.mount(containing: canonical),
              entry.isPurgefs
        else { return nil }
        return PurgeMount(entry: entry)
    }

    /// The mount of the container the app runs in (`AppContainer`), if any.
    static var ofContainer: PurgeMount? { AppContainer.root.flatMap { containing($0.path) } }

    /// The attribute's text on `path`; nil when the mount does not answer it there (`ENODATA`).
    static func text(_ attribute: PurgeAttribute, of path: String) throws(Errno) -> String? {
        do {
            let bytes = try Paths.extendedAttribute(attribute.fullName, of: path)
            return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        } catch where error == .noData {
            return nil
        }
    }

    static func flag(_ attribute: PurgeAttribute, of path: String) throws(Errno) -> Bool? {
        try text(attribute, of: path).map { $0 == "1" }
    }

    static func number(_ attribute: PurgeAttribute, of path: String) throws(Errno) -> Int64? {
        try text(attribute, of: path).flatMap { Int64($0) }
    }

    static func set(_ attribute: PurgeAttribute, of path: String, to value: String) throws(Errno) {
        try Paths.setExtendedAttribute(attribute.fullName, of: path, to: Array(value.utf8))
    }
}

/// Foundation's errors for what a call on a file met, as Foundation makes
/// them: `NSCocoaErrorDomain`, the path, the errno underneath.
enum FileError {
    enum Access { case read, write }

    static func cocoa(_ errno: Errno, path: String, _ access: Access) -> CocoaError {
        let code: CocoaError.Code
        switch (errno, access) {
        case (.noEntry, .read): code = .fileReadNoSuchFile
        case (.noEntry, .write): code = .fileNoSuchFile
        case (.accessDenied, .read), (.notPermitted, .read): code = .fileReadNoPermission
        case (.accessDenied, .write), (.notPermitted, .write): code = .fileWriteNoPermission
        case (.exists, _): code = .fileWriteFileExists
        case (.noSpace, _): code = .fileWriteOutOfSpace
        case (.readOnlyFileSystem, .write): code = .fileWriteVolumeReadOnly
        case (_, .read): code = .fileReadUnknown
        case (_, .write): code = .fileWriteUnknown
        }
        return cocoa(code, path: path, underlying: errno)
    }

    static func cocoa(_ code: CocoaError.Code, path: String, underlying errno: Errno? = nil) -> CocoaError {
        var info: [String: Any] = [NSFilePathErrorKey: path]
        if let errno {
            info[NSUnderlyingErrorKey] = NSError(domain: NSPOSIXErrorDomain, code: Int(errno.rawValue))
        }
        return CocoaError(code, userInfo: info)
    }
}
