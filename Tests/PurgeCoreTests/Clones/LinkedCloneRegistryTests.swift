@testable import PurgeCore
import XCTest

/// Clone groups without reflinks: indexing by name and by backing, group
/// lifetime, and the stored form (round trip, malformed lines, id counter).
final class LinkedCloneRegistryTests: XCTestCase {
    typealias Registry = LinkedCloneRegistry

    let dir = EntryID(device: 1, inode: 2), other = EntryID(device: 1, inode: 3)
    let backingA = EntryID(device: 1, inode: 100), backingB = EntryID(device: 1, inode: 200)
    let newBacking = EntryID(device: 1, inode: 300)
    let anchor1 = EntryID(device: 1, inode: 1001), anchor2 = EntryID(device: 1, inode: 1002)
    let anchor3 = EntryID(device: 1, inode: 1003)

    func name(_ text: String, in parent: EntryID? = nil) -> Registry.Name {
        Registry.Name(parent: parent ?? dir, name: Array(text.utf8))
    }

    /// Three members: two clones of `backingA`, one of `backingB`.
    func populated() -> Registry {
        var registry = Registry()
        registry.add(anchor: anchor1, named: name("one"), backing: backingA, handle: (1, [0xAB, 0x01]))
        registry.add(anchor: anchor2, named: name("two", in: other), backing: backingA, handle: (1, [0xAB, 0x01]))
        registry.add(anchor: anchor3, named: name("three"), backing: backingB, handle: (2, []))
        return registry
    }

    func decoded(_ text: String) -> Registry? {
        Registry(decoding: Array(text.utf8))
    }

    // MARK: Changes

    func testAddMakesOneGroupPerBackingAndAppendsMembersInOrder() throws {
        var registry = Registry()
        XCTAssertTrue(registry.isEmpty)
        registry.add(anchor: anchor1, named: name("one"), backing: backingA, handle: (1, [0xAB]))
        let a = try XCTUnwrap(registry.group(backedBy: backingA))
        XCTAssertEqual(registry.groups[a], Registry.Group(backing: backingA, handleType: 1, handle: [0xAB], content: a, retiring: nil))
        registry.add(anchor: anchor2, named: name("two"), backing: backingA, handle: (9, [0xFF]))
        registry.add(anchor: anchor3, named: name("three"), backing: backingB, handle: (2, []))
        let b = try XCTUnwrap(registry.group(backedBy: backingB))

        XCTAssertFalse(registry.isEmpty)
        XCTAssertEqual(registry.groups.count, 2)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(registry.group(backedBy: backingA), a, "a second clone of the same backing joins its group")
        XCTAssertEqual(registry.groups[a]?.handle, [0xAB], "joining a group keeps the handle it was made with")
        XCTAssertEqual(registry.members(of: a), [anchor1, anchor2])
        XCTAssertEqual(registry.members(of: b), [anchor3])
        let first = try XCTUnwrap(registry.members[anchor1]), second = try XCTUnwrap(registry.members[anchor2])
        XCTAssertLessThan(first.order, second.order)
        XCTAssertEqual(first, Registry.Member(group: a, order: first.order, parent: dir, name: Array("one".utf8)))
        XCTAssertNil(registry.group(backedBy: newBacking))
        XCTAssertEqual(registry.members(of: 12345), [])
    }

    func testMembersOfAGroupFollowChargingOrderNotIdentity() {
        var registry = Registry()
        // Added highest identity first: the order is that of adding.
        registry.add(anchor: anchor3, named: name("c"), backing: backingA, handle: (1, []))
        registry.add(anchor: anchor1, named: name("a"), backing: backingA, handle: (1, []))
        registry.add(anchor: anchor2, named: name("b"), backing: backingA, handle: (1, []))
        XCTAssertEqual(registry.members(of: registry.group(backedBy: backingA)!), [anchor3, anchor1, anchor2])
    }

    func testMemberNamedFindsByParentAndName() {
        let registry = populated()
        XCTAssertEqual(registry.member(named: name("one")), anchor1)
        XCTAssertEqual(registry.member(named: name("two", in: other)), anchor2)
        XCTAssertEqual(registry.member(named: name("three")), anchor3)
        XCTAssertNil(registry.member(named: name("two")), "same name, other directory")
        XCTAssertNil(registry.member(named: name("one", in: other)))
        XCTAssertNil(registry.member(named: name("on")))
        XCTAssertNil(registry.member(named: name("")))
    }

    func testIdentityIsTheMembersForItsNameOfTheBackingOnly() {
        let registry = populated()
        // A member's name of its group's backing: the member.
        XCTAssertEqual(registry.identity(of: backingA, named: name("one")), anchor1)
        XCTAssertEqual(registry.identity(of: backingA, named: name("two", in: other)), anchor2)
        // Another name of the backing (the primary): the backing's own.
        XCTAssertEqual(registry.identity(of: backingA, named: name("original")), backingA)
        // A member's name on a file that is no group's backing (broken, replaced): its own.
        let plain = EntryID(device: 1, inode: 555)
        XCTAssertEqual(registry.identity(of: plain, named: name("one")), plain)
        // No regular file: its own, whatever the name.
        XCTAssertEqual(registry.identity(of: backingA, regularFile: false, named: name("one")), backingA)
        // An empty registry: always its own.
        XCTAssertEqual(Registry().identity(of: backingA, named: name("one")), backingA)
    }

    func testMoveReindexes() {
        var registry = populated()
        let before = registry.members[anchor1]!
        registry.move(anchor1, to: name("renamed", in: other))
        XCTAssertNil(registry.member(named: name("one")))
        XCTAssertEqual(registry.member(named: name("renamed", in: other)), anchor1)
        XCTAssertEqual(registry.members[anchor1], Registry.Member(group: before.group, order: before.order, parent: other, name: Array("renamed".utf8)))
        XCTAssertEqual(registry.member(named: name("two", in: other)), anchor2, "other members stay where they were")

        let unchanged = registry
        registry.move(EntryID(device: 9, inode: 9), to: name("ghost"))
        XCTAssertEqual(registry, unchanged, "moving an unknown member changes nothing")
    }

    func testMoveOntoANameHeldByAnotherMember() {
        var registry = populated()
        registry.move(anchor1, to: name("three"))
        XCTAssertEqual(registry.member(named: name("three")), anchor1, "the moved member takes the name")
        XCTAssertNil(registry.member(named: name("one")))
        XCTAssertNotNil(registry.members[anchor3], "the replaced member is still known")

        // The replaced member then loses its name: the name stays the mover's.
        registry.unname(anchor3)
        XCTAssertEqual(registry.member(named: name("three")), anchor1)
        XCTAssertEqual(registry.members[anchor3]?.name, [])
        registry.remove(anchor3)
        XCTAssertEqual(registry.member(named: name("three")), anchor1)
        XCTAssertNil(registry.group(backedBy: backingB))
    }

    func testUnnameKeepsTheMemberWithoutAName() throws {
        var registry = populated()
        let group = try XCTUnwrap(registry.group(backedBy: backingA))
        let before = try XCTUnwrap(registry.members[anchor2])
        registry.unname(anchor2)
        XCTAssertNil(registry.member(named: name("two", in: other)))
        XCTAssertEqual(registry.members[anchor2], Registry.Member(group: group, order: before.order, parent: other, name: []))
        XCTAssertEqual(registry.members(of: group), [anchor1, anchor2])
        XCTAssertEqual(registry.group(backedBy: backingA), group)

        // A later name is found again.
        registry.move(anchor2, to: name("back"))
        XCTAssertEqual(registry.member(named: name("back")), anchor2)
    }

    func testRemoveDissolvesTheGroupWithItsLastMember() throws {
        var registry = populated()
        let a = try XCTUnwrap(registry.group(backedBy: backingA))
        registry.remove(anchor1)
        XCTAssertNil(registry.members[anchor1])
        XCTAssertNil(registry.member(named: name("one")))
        XCTAssertEqual(registry.group(backedBy: backingA), a, "one member left: the group stays")
        XCTAssertEqual(registry.members(of: a), [anchor2])

        registry.remove(anchor2)
        XCTAssertNil(registry.group(backedBy: backingA))
        XCTAssertNil(registry.groups[a])
        XCTAssertEqual(registry.members(of: a), [])
        XCTAssertNotNil(registry.group(backedBy: backingB), "other groups stay")

        registry.remove(anchor2)
        registry.remove(anchor3)
        XCTAssertTrue(registry.isEmpty)
        XCTAssertTrue(registry.members.isEmpty)
    }

    func testRemovingAnUnnamedMemberDissolvesItsGroupToo() {
        var registry = populated()
        registry.unname(anchor3)
        registry.remove(anchor3)
        XCTAssertNil(registry.group(backedBy: backingB))
        XCTAssertEqual(registry.groups.count, 1)
    }

    func testReplaceBackingSetsRetiringAndReindexesByTheNewBacking() throws {
        var registry = populated()
        let a = try XCTUnwrap(registry.group(backedBy: backingA))
        registry.replaceBacking(of: a, with: newBacking, handle: (3, [0x42]))
        XCTAssertEqual(registry.group(backedBy: backingA), a, "names still on the retiring backing stay members until moved")
        XCTAssertEqual(registry.group(backedBy: newBacking), a)
        XCTAssertEqual(registry.groups[a], Registry.Group(backing: newBacking, handleType: 3, handle: [0x42], content: a, retiring: backingA))
        XCTAssertEqual(registry.members(of: a), [anchor1, anchor2], "members stay in the group")
        XCTAssertEqual(registry.member(named: name("one")), anchor1)

        registry.retired(a)
        XCTAssertNil(registry.groups[a]?.retiring)
        XCTAssertNil(registry.group(backedBy: backingA), "retired: the old backing is the primary's alone")
        XCTAssertEqual(registry.group(backedBy: newBacking), a)
        XCTAssertEqual(registry.groups[a]?.content, a, "the content id survives the move")

        let unchanged = registry
        registry.replaceBacking(of: 12345, with: backingA, handle: (1, []))
        registry.retired(12345)
        XCTAssertEqual(registry, unchanged, "an unknown group changes nothing")

        // Removing every member of the moved group frees the new backing.
        registry.remove(anchor1)
        registry.remove(anchor2)
        XCTAssertNil(registry.group(backedBy: newBacking))
    }

    // MARK: Stored form

    func testEncodedRoundTrips() throws {
        var registry = populated()
        let a = try XCTUnwrap(registry.group(backedBy: backingA))
        registry.replaceBacking(of: a, with: newBacking, handle: (3, Array(0x00...0xFF)))
        registry.move(anchor1, to: Registry.Name(parent: dir, name: Array(0x80...0xFF)))
        registry.move(anchor2, to: name("with  spaces and\ttab "))
        registry.unname(anchor3)

        let text = String(decoding: registry.encoded, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("next "), text)
        let hex = (0...0xFF).map { String(format: "%02x", $0) }.joined()
        XCTAssertTrue(text.contains("group \(a) 1 300 \(a) 3 \(hex) 1 100\n"), text)
        XCTAssertTrue(text.contains(" - -\n"), "a group not retiring: \(text)")
        let decoded = try XCTUnwrap(Registry(decoding: registry.encoded), text)
        XCTAssertEqual(decoded, registry)
        XCTAssertEqual(decoded.encoded, registry.encoded)
        XCTAssertEqual(decoded.member(named: Registry.Name(parent: dir, name: Array(0x80...0xFF))), anchor1)
        XCTAssertEqual(decoded.member(named: name("with  spaces and\ttab ")), anchor2)
        XCTAssertEqual(decoded.members[anchor3]?.name, [])
        XCTAssertEqual(decoded.groups[a]?.retiring, backingA)
        XCTAssertNil(decoded.groups[decoded.group(backedBy: backingB)!]?.retiring)
        XCTAssertEqual(decoded.groups[decoded.group(backedBy: backingB)!]?.handle, [], "an empty handle round-trips")

        registry.retired(a)
        XCTAssertEqual(Registry(decoding: registry.encoded), registry)
    }

    func testEmptyRegistryRoundTrips() throws {
        XCTAssertEqual(Registry(decoding: Registry().encoded), Registry())
        XCTAssertEqual(Registry(decoding: []), Registry())
        XCTAssertEqual(String(decoding: Registry().encoded, as: UTF8.self), "next \(LinkedCloneRegistry.firstID)\n")
    }

    func testStoredLinesInTheDocumentedForm() throws {
        let text = """
            next 9223372036854775812
            group 9223372036854775808 5 100 77 1 ab01 5 99
            group 9223372036854775809 5 200 9223372036854775809 2 - - -
            member 5 1001 9223372036854775808 9223372036854775810 5 2 6f6e65
            member 5 1002 9223372036854775809 9223372036854775811 5 2 -

            """
        let registry = try XCTUnwrap(decoded(text))
        let first: UInt64 = 1 << 63
        XCTAssertEqual(registry.groups[first], Registry.Group(backing: EntryID(device: 5, inode: 100), handleType: 1, handle: [0xAB, 0x01], content: 77, retiring: EntryID(device: 5, inode: 99)))
        XCTAssertEqual(registry.group(backedBy: EntryID(device: 5, inode: 200)), first + 1)
        XCTAssertEqual(registry.member(named: Registry.Name(parent: EntryID(device: 5, inode: 2), name: Array("one".utf8))), EntryID(device: 5, inode: 1001))
        XCTAssertEqual(registry.members[EntryID(device: 5, inode: 1002)], Registry.Member(group: first + 1, order: first + 3, parent: EntryID(device: 5, inode: 2), name: []))
        XCTAssertEqual(String(decoding: registry.encoded, as: UTF8.self), text.replacingOccurrences(of: "\n\n", with: "\n"))
    }

    func testMalformedInputDecodesToNil() {
        let next = "next 9223372036854775810\n"
        let group = "group 9223372036854775808 5 100 77 1 ab01 - -\n"
        let member = "member 5 1001 9223372036854775808 9223372036854775809 5 2 6f6e65\n"
        XCTAssertNotNil(decoded(next + group + member), "the valid base line set")

        let cases: [(String, String)] = [
            ("bad hex in a name", next + group + "member 5 1001 9223372036854775808 9223372036854775809 5 2 6g6e65\n"),
            ("upper-case hex", next + group + "member 5 1001 9223372036854775808 9223372036854775809 5 2 6F6E65\n"),
            ("odd hex length in a name", next + group + "member 5 1001 9223372036854775808 9223372036854775809 5 2 6f6e6\n"),
            ("bad hex in a handle", next + "group 9223372036854775808 5 100 77 1 zz - -\n" + member),
            ("odd hex length in a handle", next + "group 9223372036854775808 5 100 77 1 abc - -\n" + member),
            ("unknown line", next + group + member + "anchor 5 1001\n"),
            ("unknown word with a valid count", next + "groups 9223372036854775808 5 100 77 1 ab01 - -\n"),
            ("member of a missing group", next + group + "member 5 1001 9223372036854775999 9223372036854775809 5 2 6f6e65\n"),
            ("member before its group", next + member + group),
            ("next with too many fields", "next 9223372036854775810 1\n" + group + member),
            ("next without a number", "next\n" + group + member),
            ("next not a number", "next x\n" + group + member),
            ("group with too few fields", next + "group 9223372036854775808 5 100 77 1 ab01 -\n" + member),
            ("group with too many fields", next + "group 9223372036854775808 5 100 77 1 ab01 - - -\n" + member),
            ("member with too few fields", next + group + "member 5 1001 9223372036854775808 9223372036854775809 5 2\n"),
            ("member with too many fields", next + group + "member 5 1001 9223372036854775808 9223372036854775809 5 2 6f6e65 x\n"),
            ("group number out of range", next + "group 9223372036854775808 5 100 77 1 ab01 - -\n".replacingOccurrences(of: " 77 ", with: " 18446744073709551616 ") + member),
            ("handle type not an Int32", next + "group 9223372036854775808 5 100 77 4294967296 ab01 - -\n" + member),
            ("retiring half given", next + "group 9223372036854775808 5 100 77 1 ab01 5 -\n" + member),
            ("retiring not a number", next + "group 9223372036854775808 5 100 77 1 ab01 x 9\n" + member),
            ("negative inode", next + group + "member 5 -1 9223372036854775808 9223372036854775809 5 2 6f6e65\n"),
        ]
        for (label, text) in cases {
            XCTAssertNil(decoded(text), label)
        }
    }

    func testNextNeverGoesBelowTheFirstID() throws {
        let first: UInt64 = 1 << 63
        for stored in ["next 0\n", "next 5\n", "next \(first - 1)\n", ""] {
            var registry = try XCTUnwrap(decoded(stored), stored)
            XCTAssertEqual(String(decoding: registry.encoded, as: UTF8.self), "next \(first)\n", stored)
            registry.add(anchor: anchor1, named: name("one"), backing: backingA, handle: (1, []))
            XCTAssertEqual(registry.group(backedBy: backingA), first, stored)
            XCTAssertEqual(registry.groups[first]?.content, first)
            XCTAssertEqual(registry.members[anchor1]?.order, first + 1)
        }
        XCTAssertEqual(String(decoding: try XCTUnwrap(decoded("next \(first + 7)\n")).encoded, as: UTF8.self), "next \(first + 7)\n")
    }

    func testIDsAfterDecodingDoNotCollideWithStoredOnes() throws {
        var registry = populated()
        registry.remove(anchor3)
        var decoded = try XCTUnwrap(Registry(decoding: registry.encoded))
        let stored = Set(decoded.groups.keys).union(decoded.groups.values.map(\.content)).union(decoded.members.values.map(\.order))

        decoded.add(anchor: EntryID(device: 1, inode: 1004), named: name("four"), backing: newBacking, handle: (1, []))
        let fresh = try XCTUnwrap(decoded.group(backedBy: newBacking))
        XCTAssertFalse(stored.contains(fresh))
        let content = try XCTUnwrap(decoded.groups[fresh]?.content)
        XCTAssertGreaterThan(content, try XCTUnwrap(stored.max()), "a new group's content is newer than every stored id")
        let order = try XCTUnwrap(decoded.members[EntryID(device: 1, inode: 1004)]?.order)
        XCTAssertFalse(stored.contains(order))
        XCTAssertEqual(decoded.groups.count, 2, "the stored group is untouched")

        // A new member of a stored group is charged after the stored ones.
        let a = try XCTUnwrap(decoded.group(backedBy: backingA))
        decoded.add(anchor: EntryID(device: 1, inode: 1005), named: name("five"), backing: backingA, handle: (1, []))
        XCTAssertEqual(decoded.members(of: a), [anchor1, anchor2, EntryID(device: 1, inode: 1005)])
    }

    func testAnchorNameIsTheInodeNumber() {
        XCTAssertEqual(Registry.anchorName(of: EntryID(device: 7, inode: 1234)), "a1234")
    }

    // MARK: Changes appended to a snapshot

    /// A snapshot followed by the changes taken after each step reads back
    /// as the registry at the end, whatever the steps were.
    func testSnapshotAndChangesReadBackAsTheRegistry() throws {
        var registry = populated()
        let snapshot = registry.encoded
        _ = registry.takeChanges()
        var journal: [UInt8] = []
        registry.move(anchor1, to: name("renamed", in: other))
        journal += registry.takeChanges()
        registry.unname(anchor2)
        journal += registry.takeChanges()
        registry.replaceBacking(of: try XCTUnwrap(registry.group(backedBy: backingA)), with: newBacking, handle: (3, [1]))
        registry.retired(try XCTUnwrap(registry.group(backedBy: newBacking)))
        journal += registry.takeChanges()
        registry.remove(anchor3)
        registry.add(anchor: EntryID(device: 1, inode: 1004), named: name("four"), backing: backingB, handle: (2, []))
        journal += registry.takeChanges()
        XCTAssertEqual(Registry(decoding: snapshot + journal), registry)
        XCTAssertEqual(registry.takeChanges(), [], "taken: nothing left")

        // A last line cut short by a crash is left out; the rest is read.
        let cut = Array(snapshot + journal + Array("member 1 77 ".utf8))
        XCTAssertEqual(Registry(decoding: cut), registry)
        // A malformed line before the end is not a crash's doing.
        XCTAssertNil(Registry(decoding: snapshot + Array("member 1 77 \n".utf8) + journal))
    }

    // MARK: A rename under way

    /// Between `beginMove` and its outcome a member is whichever of its two
    /// names holds its group's data; a name holding another group's data
    /// is never the member's.
    func testAMemberBeingRenamedIsEitherNameOfItsGroupsData() throws {
        var registry = populated()
        registry.beginMove(anchor1, to: name("moved", in: other))
        XCTAssertEqual(registry.moving[anchor1], name("moved", in: other))
        XCTAssertEqual(registry.identity(of: backingA, named: name("one")), anchor1, "not renamed yet")
        XCTAssertEqual(registry.identity(of: backingA, named: name("moved", in: other)), anchor1, "renamed")
        XCTAssertEqual(registry.identity(of: backingB, named: name("moved", in: other)), backingB, "another group's data")
        XCTAssertEqual(registry.identity(of: backingB, named: name("one")), backingB, "another group's data under the old name")
        XCTAssertEqual(registry.member(named: name("one")), anchor1, "the member keeps its name until the outcome")

        var done = registry
        done.move(anchor1, to: name("moved", in: other))
        XCTAssertNil(done.moving[anchor1], "the move recorded ends it")
        XCTAssertEqual(done.identity(of: backingA, named: name("one")), backingA)
        XCTAssertEqual(done.identity(of: backingA, named: name("moved", in: other)), anchor1)

        var failed = registry
        failed.endMove(anchor1)
        XCTAssertNil(failed.moving[anchor1])
        XCTAssertEqual(failed.identity(of: backingA, named: name("moved", in: other)), backingA, "the rename failed")
        XCTAssertEqual(failed.identity(of: backingA, named: name("one")), anchor1)

        var removed = registry
        removed.remove(anchor1)
        XCTAssertTrue(removed.moving.isEmpty, "a forgotten member's move goes with it")
        registry.beginMove(EntryID(device: 9, inode: 9), to: name("ghost"))
        XCTAssertNil(registry.moving[EntryID(device: 9, inode: 9)], "no move for an unknown member")
    }

    /// A daemon killed between `beginMove` and the outcome leaves the move
    /// in the journal; the snapshot keeps it too, and the outcome ends it.
    func testAMoveUnderWayIsStored() throws {
        var registry = populated()
        let snapshot = registry.encoded
        _ = registry.takeChanges()
        registry.beginMove(anchor2, to: name("moved"))
        let journal = registry.takeChanges()
        XCTAssertEqual(String(decoding: journal, as: UTF8.self), "moving 1 1002 1 2 6d6f766564\n")
        let read = try XCTUnwrap(Registry(decoding: snapshot + journal))
        XCTAssertEqual(read, registry)
        XCTAssertEqual(read.identity(of: backingA, named: name("moved")), anchor2)
        XCTAssertEqual(try XCTUnwrap(Registry(decoding: registry.encoded)), registry, "in a snapshot")
        registry.endMove(anchor2)
        let ended = try XCTUnwrap(Registry(decoding: snapshot + journal + registry.takeChanges()))
        XCTAssertTrue(ended.moving.isEmpty, "a member line ends the move")
        XCTAssertNil(decoded("moving 1 1002 1 2\n"), "malformed")
        XCTAssertEqual(decoded("moving 1 1002 1 2 6d\n"), Registry(), "a move of no member is left out")
    }

    func testDecodingRecordsNoChanges() throws {
        var decoded = try XCTUnwrap(Registry(decoding: populated().encoded))
        XCTAssertEqual(decoded.takeChanges(), [])
    }
}
