import Glibc
import PurgeCore
import PurgeSys
import Synchronization

/// A feature's own `user.purgefs.*` names: it answers them, and only them,
/// registered at mount (`AttributeProviders`). The passthrough has checked,
/// before a provider is asked, what every name shares: that the name applies
/// to the node (`ENODATA` on read, `EINVAL` on write or removal otherwise),
/// and for a control name that the caller is root or the mount's owner
/// (`EPERM`). The provider checks the value (`EINVAL`) and answers.
/// Values are decimal ASCII without a newline.
protocol AttributeProvider: Sendable {
    /// The names this provider answers.
    var attributes: [PurgeAttribute] { get }
    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String
    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno)
    /// Removing a name (only a flag can be: removing it clears it).
    func remove(_ attribute: PurgeAttribute, on inode: Inode) throws(Errno)
}

extension AttributeProvider {
    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String { throw Errno.noData }
    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) { throw Errno.invalidArgument }
    func remove(_ attribute: PurgeAttribute, on inode: Inode) throws(Errno) { throw Errno.noData }
}

/// A value written to a purgefs name, and who wrote it.
struct AttributeValue: Sendable {
    /// As written.
    let bytes: [UInt8]
    let caller: uid_t

    /// The value without one trailing newline or NUL, as `setfattr` or `echo` may leave.
    var text: String {
        var slice = bytes[...]
        if let last = slice.last, last == 0x0A || last == 0 { slice = slice.dropLast() }
        return String(decoding: slice, as: UTF8.self)
    }
}

/// Who answers each `user.purgefs.*` name on this mount. A name no provider
/// registered (the cloud tier's without `cloud=`) answers `ENODATA` on
/// read and `EINVAL` on write.
///
/// Error precedence for a purgefs name: unknown name, or one that does not
/// apply to the node, first (`ENODATA` on read, `EINVAL` on write); then
/// permission for control attributes (`EPERM`); then the value (`EINVAL`).
final class AttributeProviders: Sendable {
    /// Filled at mount, before the first request, and read after.
    private let table = Mutex<[PurgeAttribute: any AttributeProvider]>([:])

    /// The longest value any numeric attribute can have: a size probe answers
    /// this, so a value that grows between probe and read still fits.
    static let probeSize = 20

    /// Each name has one owner: a second provider for a name is a mistake in the mount's assembly.
    func register(_ providers: [any AttributeProvider]) {
        table.withLock { table in
            for provider in providers {
                for attribute in provider.attributes {
                    precondition(table[attribute] == nil, "two providers for \(attribute.fullName)")
                    table[attribute] = provider
                }
            }
        }
    }

    private func provider(of attribute: PurgeAttribute) -> (any AttributeProvider)? {
        table.withLock { $0[attribute] }
    }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        guard attribute.isReadable(on: Self.target(of: inode)), let provider = provider(of: attribute) else { throw Errno.noData }
        return try provider.value(of: attribute, on: inode)
    }

    func set(_ attribute: PurgeAttribute, on inode: Inode, value: [UInt8], caller: uid_t) throws(Errno) {
        guard attribute.isWritable(on: Self.target(of: inode)) else { throw Errno.invalidArgument }
        if attribute.isControl && caller != 0 && caller != DaemonIdentity.shared.user { throw Errno.notPermitted }
        guard let provider = provider(of: attribute) else { throw Errno.invalidArgument }
        try provider.set(attribute, on: inode, to: AttributeValue(bytes: value, caller: caller))
    }

    func remove(_ attribute: PurgeAttribute, on inode: Inode) throws(Errno) {
        guard attribute.isWritable(on: Self.target(of: inode)), let provider = provider(of: attribute) else { throw Errno.noData }
        try provider.remove(attribute, on: inode)
    }

    static func target(of inode: Inode) -> PurgeAttribute.Target {
        if inode.id == .root { return .root }
        if inode.isDirectory { return .directory }
        return inode.isRegularFile ? .file : .other
    }
}

extension PurgeAttribute {
    /// `parse` of a name as the kernel gives it: a name outside the
    /// namespace (every name but purgefs's, asked at a writer's every
    /// `security.capability` refresh) is told by its bytes, without making
    /// a `String` of it.
    static func parse(_ name: CName) -> Lookup {
        guard CNames.hasPrefix(name, prefixBytes) else { return .foreign }
        return parse(String(cString: name))
    }

    private static let prefixBytes: [CChar] = prefix.utf8.map { CChar(bitPattern: $0) }
}
