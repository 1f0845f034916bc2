import Foundation
import Glibc
import PurgeCore
import XCTest

/// `purgefs explore` on applications nobody here wrote, each recorded on a
/// real mount with a small workload and every crash state checked (no
/// sampling: a few hundred states a run at most): git, SQLite in
/// both journal modes at two `synchronous` levels, LevelDB through plyvel
/// and LMDB through the `lmdb` module (Debian's, from scripts/bootstrap, so
/// `/usr/bin/python3`), and two files overwritten in place without a sync.
/// Each checker prints one line naming the kind of failure: an acknowledged
/// write lost, or the store unreadable ("corruption: ...", SQLite's
/// `integrity_check`, `git fsck`), and each test asserts which kinds occur
/// under which models. The verdicts are the ones measured on git 2.39,
/// SQLite 3.40, LevelDB 1.23 (plyvel 1.5) and LMDB 0.9.24 (py-lmdb 1.4);
/// docs/BENCHMARKS.md has them as a table.
final class ExploreAppsTests: XCTestCase {
    private var fixture: ExploreFixture!
    private var scratch: String { fixture.scratch }
    private var container: String { fixture.container }
    private var report: String { fixture.report }

    override func setUpWithError() throws {
        fixture = try ExploreFixture()
    }

    override func tearDownWithError() throws {
        fixture?.remove()
    }

    /// One failed state as the report gives it.
    private struct Failure {
        var state: String
        var message: String
        var models: [String]
        var lost: [String]
        var isCorruption: Bool { !message.hasPrefix("acknowledged") }
    }

    private struct Explored {
        var states: Int
        var failures: [Failure]
        var corruptions: [Failure] { failures.filter(\.isCorruption) }
    }

    /// `purgefs explore --check CHECK ARGUMENTS CONTAINER -- COMMAND`, every state
    /// (refused if explore sampled); nothing may be left mounted or behind.
    private func explore(_ command: [String], check: String, _ arguments: [String]) throws -> Explored {
        let result = try fixture.explore(["--check", check, "--report", report] + arguments + [container, "--"] + command)
        let json = try fixture.reportJSON()
        XCTAssertEqual(json["commandStatus"] as? Int, 0, "the app itself succeeded: \(result)")
        XCTAssertEqual(json["sampled"] as? Bool, false)
        let states = try XCTUnwrap(json["states"] as? Int)
        let found = fixture.failures(json).map {
            Failure(state: "\($0["point"] ?? "")/\($0["variant"] ?? "")", message: $0["stderr"] as? String ?? "",
                    models: $0["models"] as? [String] ?? [json["model"] as? String ?? ""], lost: $0["lost"] as? [String] ?? [])
        }
        XCTAssertEqual(result.status, found.isEmpty ? 0 : 1, "\(result)")
        for failure in found { XCTAssertFalse(failure.lost.isEmpty, "a failed state lost something the run had done: \(failure)") }
        return Explored(states: states, failures: found)
    }

    private func file(_ name: String, _ text: String, executable: Bool = true) throws -> String {
        let path = scratch + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, executable ? 0o755 : 0o644)
        return path
    }

    private func run(_ arguments: [String], in cwd: String? = nil) throws {
        let result = try Subprocess.run(arguments, cwd: cwd, environment: ["GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(result.status, 0, "\(result)")
    }

    // MARK: git

    /// A repository of one commit (two files, one in a directory), made before
    /// the run: the base copy, durable.
    private func makeRepository() throws {
        let repo = container + "/repo"
        try FileManager.default.createDirectory(atPath: repo + "/src", withIntermediateDirectories: true)
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: repo + "/README"))
        try Data("int main(void) { return 0; }\n".utf8).write(to: URL(fileURLWithPath: repo + "/src/main.c"))
        try run(["git", "init", "-q", "-b", "main", "."], in: repo)
        try run(["git", "add", "-A"], in: repo)
        try run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"], in: repo)
    }

    private func gitApp(_ commands: String) throws -> String {
        try file("git-app", """
            #!/bin/sh
            export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
            cd "$PURGEFS_MOUNT/repo" || exit 1
            echo 'hello again' >> README
            echo 'int main(void) { return 1; }' > src/main.c
            \(commands)
            echo committed
            """)
    }

    /// fsck first (an empty object or index is corruption), then the commit
    /// once `git commit` has returned.
    private func gitCheck() throws -> String {
        try file("git-check", """
            #!/bin/sh
            export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
            cd "$PURGEFS_CRASH_STATE/repo" || { echo "no repo" >&2; exit 1; }
            fsck=$(git fsck --full --no-progress 2>&1) || { echo "git fsck: $(printf '%s\\n' "$fsck" | grep -m1 -E '^(error|fatal)')" >&2; exit 1; }
            subject=$(git log -1 --format=%s 2>&1) || { echo "git log: $subject" >&2; exit 1; }
            if grep -q '^committed' "$PURGEFS_CRASH_OUTPUT" && [ "$subject" != second ]; then
              echo "acknowledged commit lost (HEAD is $subject)" >&2; exit 1
            fi
            exit 0
            """)
    }

    private let identity = "-c user.name=t -c user.email=t@t"

    /// git writes a loose object to a temporary file and link()s it to its
    /// name without an fsync (core.fsync's default leaves loose objects out):
    /// on ext4 too the name commits before delayed allocation writes the
    /// data, the "object file is empty" that git users meet after a crash.
    func testGitCommitAllLeavesEmptyObjectsUnderExt4() throws {
        try makeRepository()
        let explored = try explore([try gitApp("git \(identity) commit -q -a -m second || exit 1")], check: try gitCheck(), [])
        XCTAssertGreaterThan(explored.failures.count, 10, "most states between the first object and the end: \(explored)")
        let empty = explored.failures.filter { $0.message.hasPrefix("git fsck: error: object file .git/objects/") && $0.message.hasSuffix(" is empty") }
        XCTAssertGreaterThan(empty.count, 10, "\(explored.failures.map(\.message))")
        for failure in explored.failures where !empty.contains(where: { $0.state == failure.state }) {
            XCTAssertTrue(failure.message.hasPrefix("acknowledged commit lost"), "\(failure)")
        }
    }

    /// With core.fsync=all, `add` then `commit` never leaves the repository
    /// corrupt under ext4 (objects, index and ref are fsynced before each
    /// rename). What stays is one state: git fsyncs refs/heads/main.lock but
    /// never the directory after renaming it to refs/heads/main, so the last
    /// state whose names are the durable ones has HEAD at the first commit
    /// though `git commit` returned (ext4 commits that rename within its
    /// journal's commit interval, 5 s by default).
    func testGitWithCoreFsyncAllAddThenCommitIsNeverCorruptUnderExt4() throws {
        try makeRepository()
        let app = try gitApp("git -c core.fsync=all add README src/main.c || exit 1\ngit -c core.fsync=all \(identity) commit -q -m second || exit 1")
        let explored = try explore([app], check: try gitCheck(), [])
        XCTAssertEqual(explored.corruptions.map(\.message), [], "\(explored)")
        XCTAssertEqual(explored.failures.count, 1, "\(explored)")
        for failure in explored.failures {
            XCTAssertEqual(failure.message, "acknowledged commit lost (HEAD is first)")
            XCTAssertTrue(failure.state.hasSuffix("/names-lost"), "\(failure)")
            XCTAssertTrue(failure.lost.contains("rename repo/.git/refs/heads/main.lock -> repo/.git/refs/heads/main"), "\(failure)")
        }
    }

    /// `commit -a` with core.fsync=all renames an index.lock over the index
    /// without fsyncing it: ext4's auto_da_alloc writes it first, every other
    /// model can leave an empty index behind.
    func testGitCommitAllWithCoreFsyncAllLosesTheIndexOnEveryModelButExt4() throws {
        try makeRepository()
        let app = try gitApp("git -c core.fsync=all \(identity) commit -q -a -m second || exit 1")
        let explored = try explore([app], check: try gitCheck(), ["--models", "all"])
        XCTAssertFalse(explored.corruptions.isEmpty, "\(explored)")
        for failure in explored.corruptions {
            XCTAssertEqual(failure.message, "git fsck: fatal: .git/index: index file smaller than expected", "\(failure)")
            XCTAssertEqual(failure.models, ["ext4-noauto_da_alloc", "xfs", "btrfs", "posix"], "\(failure)")
        }
        for failure in explored.failures where !failure.isCorruption {
            XCTAssertEqual(failure.message, "acknowledged commit lost (HEAD is first)", "the unsynced last ref rename: \(failure)")
        }
    }

    // MARK: SQLite

    /// A database of 30 rows with an index, made before the run; the app adds
    /// 10 rows in each of three transactions (several pages each: the table's
    /// and the index's), one sqlite3 process per transaction.
    private func sqliteApp(journal: String, synchronous: String) throws -> (app: String, check: String) {
        try run(["sqlite3", container + "/app.db", """
            PRAGMA journal_mode=\(journal); CREATE TABLE t(n INTEGER PRIMARY KEY, v TEXT); CREATE INDEX tv ON t(v);
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<30)
            INSERT INTO t(v) SELECT printf('%d', x*37 % 101) || hex(zeroblob(100)) FROM c;
            """])
        let app = try file("sqlite-app", """
            #!/bin/sh
            cd "$PURGEFS_MOUNT" || exit 1
            for i in 1 2 3; do
              sqlite3 app.db "PRAGMA synchronous=\(synchronous); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<10) INSERT INTO t(v) SELECT printf('%d', ($i*10+x)*37 % 101) || hex(zeroblob(100)) FROM c;" || exit 1
              echo "committed $i"
            done
            """)
        let check = try file("sqlite-check", """
            #!/bin/sh
            db="$PURGEFS_CRASH_STATE/app.db"
            want=$((30 + 10 * $(grep -c '^committed' "$PURGEFS_CRASH_OUTPUT")))
            ok=$(sqlite3 "$db" 'PRAGMA integrity_check' 2>&1)
            [ "$ok" = ok ] || { echo "integrity_check: $(printf '%s\\n' "$ok" | head -n 1)" >&2; exit 1; }
            rows=$(sqlite3 "$db" 'SELECT count(*) FROM t' 2>&1) || { echo "SELECT: $rows" >&2; exit 1; }
            [ "$rows" -ge "$want" ] || { echo "acknowledged rows lost: $rows of $want" >&2; exit 1; }
            """)
        return (app, check)
    }

    func testSQLiteInWALModeWithSynchronousFullRecoversFromEveryStateOnEveryModel() throws {
        let (app, check) = try sqliteApp(journal: "WAL", synchronous: "FULL")
        let explored = try explore([app], check: check, ["--models", "all"])
        XCTAssertGreaterThan(explored.states, 100, "every write of the WAL and the database")
        XCTAssertEqual(explored.failures.map(\.state), [])
    }

    /// DELETE mode commits by unlinking the journal, and FULL does not fsync
    /// the directory after that unlink: until the next transaction's fsync,
    /// a crash brings the journal back and rolls the commit back. SQLite
    /// documents it: EXTRA is "like FULL with the addition that the directory
    /// containing a rollback journal is synced after that journal is
    /// unlinked". Lost commits only, never a malformed database; and with
    /// EXTRA, nothing at all.
    func testSQLiteInDeleteModeWithSynchronousFullLosesCommitsOnlyThroughTheUnlinkedJournal() throws {
        let (app, check) = try sqliteApp(journal: "DELETE", synchronous: "FULL")
        let explored = try explore([app], check: check, [])
        XCTAssertFalse(explored.failures.isEmpty)
        for failure in explored.failures {
            XCTAssertTrue(failure.message.hasPrefix("acknowledged rows lost: "), "\(failure)")
            XCTAssertTrue(failure.state.hasSuffix("/names-lost"), "\(failure)")
            XCTAssertTrue(failure.lost.contains("removal of app.db-journal"), "\(failure)")
        }
        try FileManager.default.removeItem(atPath: container + "/app.db")
        let (extra, _) = try sqliteApp(journal: "DELETE", synchronous: "EXTRA")
        XCTAssertEqual(try explore([extra], check: check, []).failures.map(\.state), [], "EXTRA syncs the directory after the unlink")
    }

    /// With synchronous OFF nothing is synced: under ext4 (no reordering)
    /// commits are lost, the database stays whole; only `posix`, where one
    /// page of a transaction reaches the disk without the others, finds the
    /// database malformed or its index out of step with its table (without
    /// `--torn`).
    private func assertSynchronousOffIsCorruptOnlyWhenWritesReorder(journal: String) throws {
        let (app, check) = try sqliteApp(journal: journal, synchronous: "OFF")
        let explored = try explore([app], check: check, ["--models", "ext4,posix"])
        XCTAssertFalse(explored.corruptions.isEmpty, "\(explored)")
        for failure in explored.corruptions {
            XCTAssertEqual(failure.models, ["posix"], "\(failure)")
            XCTAssertTrue(failure.state.contains("/reordered-"), "\(failure)")
            XCTAssertTrue(failure.message.hasPrefix("integrity_check: "), "\(failure)")
        }
        XCTAssertTrue(explored.corruptions.contains { $0.message.contains("database disk image is malformed") }, "\(explored.corruptions)")
        XCTAssertTrue(explored.failures.contains { $0.message.hasPrefix("acknowledged rows lost: ") && $0.models.contains("ext4") })
    }

    func testSQLiteInDeleteModeWithSynchronousOffIsCorruptOnlyWhenWritesReorder() throws {
        try assertSynchronousOffIsCorruptOnlyWhenWritesReorder(journal: "DELETE")
    }

    func testSQLiteInWALModeWithSynchronousOffIsCorruptOnlyWhenWritesReorder() throws {
        try assertSynchronousOffIsCorruptOnlyWhenWritesReorder(journal: "WAL")
    }

    // MARK: LevelDB and LMDB, through Python

    /// Five batches (transactions) of 20 keys; a line printed after each. The
    /// checker opens the store, reads every key back and names the first
    /// problem: a batch in part, a wrong value, an error opening it
    /// (corruption), or an acknowledged batch missing.
    private func keyValueCheck(_ name: String, open: String, error: String, unit: String) throws -> String {
        let check = try file(name + "-check.py", """
            import os, sys
            \(open.split(separator: "\n").first ?? "")
            acked = sum(1 for line in open(os.environ["PURGEFS_CRASH_OUTPUT"]) if line.startswith("\(unit)"))
            try:
            \(open.split(separator: "\n").dropFirst().map { "    " + $0 }.joined(separator: "\n"))
            except \(error) as error:
                sys.exit("corruption: %s" % error)
            for i in range(1, 6):
                present = [b"key-%d-%02d" % (i, j) in keys for j in range(20)]
                if any(present) and not all(present):
                    sys.exit("corruption: \(unit) %d in part, %d of 20 keys" % (i, sum(present)))
                for j in range(20):
                    if keys.get(b"key-%d-%02d" % (i, j), b"value-%d-%02d-" % (i, j) + b"x" * 100) != b"value-%d-%02d-" % (i, j) + b"x" * 100:
                        sys.exit("corruption: key-%d-%02d holds a wrong value" % (i, j))
                if i <= acked and not all(present):
                    sys.exit("acknowledged \(unit) %d lost" % i)
            """, executable: false)
        // A checker killed by SIGBUS (a map read past the end of the file) prints nothing itself.
        return "/usr/bin/python3 \(check) || { s=$?; [ $s = 135 ] && echo 'corruption: SIGBUS reading the store (a page it names is past the end of the file)' >&2; exit 1; }"
    }

    private func keyValueApp(_ name: String, open: String, transaction: String, unit: String) throws -> [String] {
        let app = try file(name + "-app.py", """
            import os, sys
            \(open)
            for i in range(1, 6):
                with \(transaction) as batch:
                    for j in range(20):
                        batch.put(b"key-%d-%02d" % (i, j), b"value-%d-%02d-" % (i, j) + b"x" * 100)
                print("\(unit)", i, flush=True)
            """, executable: false)
        return ["/usr/bin/python3", app]
    }

    /// LevelDB makes its store in the run: CURRENT, the MANIFEST and the log.
    private func levelDB(sync: Bool) throws -> (app: [String], check: String) {
        let app = try keyValueApp("leveldb", open: """
            import plyvel
            db = plyvel.DB(os.environ["PURGEFS_MOUNT"] + "/db", create_if_missing=True)
            """, transaction: "db.write_batch(sync=\(sync ? "True" : "False"))", unit: "batch")
        let check = try keyValueCheck("leveldb", open: """
            import plyvel
            db = plyvel.DB(os.environ["PURGEFS_CRASH_STATE"] + "/db", create_if_missing=True, paranoid_checks=True)
            keys = dict(db)
            """, error: "plyvel.Error", unit: "batch")
        return (app, check)
    }

    func testLevelDBWithSyncedBatchesRecoversFromEveryStateOnEveryModel() throws {
        let (app, check) = try levelDB(sync: true)
        XCTAssertEqual(try explore(app, check: check, ["--models", "all"]).failures.map(\.state), [])
    }

    /// Without sync a batch is acknowledged once it is in the log, unsynced:
    /// batches are lost, whole (LevelDB's log reader drops a record in part),
    /// on every model.
    func testLevelDBWithoutSyncLosesAcknowledgedBatchesWholeAndIsNeverCorrupt() throws {
        let (app, check) = try levelDB(sync: false)
        let explored = try explore(app, check: check, ["--models", "all"])
        XCTAssertFalse(explored.failures.isEmpty)
        XCTAssertEqual(explored.corruptions.map(\.message), [], "\(explored)")
        XCTAssertTrue(explored.failures.contains { $0.models.contains("ext4") }, "\(explored)")
    }

    /// LMDB's environment is made before the run (its two meta pages); the
    /// app opens it with the `sync` and `metasync` given (without the lock
    /// file: one process).
    private func lmdb(sync: Bool, metasync: Bool) throws -> (app: [String], check: String) {
        try run(["/usr/bin/python3", "-c", "import lmdb; lmdb.open('\(container)/db', map_size=1 << 20, lock=False).close()"])
        let app = try keyValueApp("lmdb", open: """
            import lmdb
            env = lmdb.open(os.environ["PURGEFS_MOUNT"] + "/db", map_size=1 << 20, lock=False, sync=\(sync ? "True" : "False"), metasync=\(metasync ? "True" : "False"))
            """, transaction: "env.begin(write=True)", unit: "commit")
        let check = try keyValueCheck("lmdb", open: """
            import lmdb
            env = lmdb.open(os.environ["PURGEFS_CRASH_STATE"] + "/db", map_size=1 << 20, lock=False)
            keys = dict(env.begin().cursor())
            """, error: "lmdb.Error", unit: "commit")
        return (app, check)
    }

    func testLMDBWithSyncRecoversFromEveryStateOnEveryModel() throws {
        let (app, check) = try lmdb(sync: true, metasync: true)
        XCTAssertEqual(try explore(app, check: check, ["--models", "all"]).failures.map(\.state), [])
    }

    /// MDB_NOMETASYNC: "maintains database integrity, but a system crash may
    /// undo the last committed transaction" (lmdb.h), and so it does here.
    func testLMDBWithoutMetasyncLosesOnlyTheLastCommits() throws {
        let (app, check) = try lmdb(sync: true, metasync: false)
        let explored = try explore(app, check: check, ["--models", "all"])
        XCTAssertFalse(explored.failures.isEmpty)
        XCTAssertEqual(explored.corruptions.map(\.message), [], "\(explored)")
    }

    /// MDB_NOSYNC: "a system crash can then corrupt the database or lose the
    /// last transactions" unless the filesystem "preserves write order"
    /// (lmdb.h). The ext4 model keeps write order (unsynced pages are lost,
    /// in order), so it loses commits only; `posix` writes a meta page
    /// without the pages it names, and the store cannot be read.
    func testLMDBWithoutSyncIsCorruptOnlyWhenWritesReorder() throws {
        let (app, check) = try lmdb(sync: false, metasync: false)
        let explored = try explore(app, check: check, ["--models", "ext4,posix"])
        XCTAssertFalse(explored.corruptions.isEmpty, "\(explored)")
        for failure in explored.corruptions {
            XCTAssertEqual(failure.models, ["posix"], "\(failure)")
            XCTAssertTrue(failure.message.hasPrefix("corruption: "), "\(failure)")
        }
        XCTAssertTrue(explored.failures.contains { $0.message.hasPrefix("acknowledged commit") && $0.models.contains("ext4") }, "\(explored)")
    }

    // MARK: Two files overwritten in place

    /// `payload` then `marker` overwritten in place, no sync. A reader trusts
    /// the payload once the marker is new. Only `posix` finds the state with
    /// the new marker and the old payload: under `ext4` the model loses every
    /// unsynced byte (delayed allocation and data=ordered give writeback no
    /// order the model could rely on, so it assumes none survived), and with
    /// `--torn` the pages that survive are a prefix in write order, payload
    /// first. Real writeback can flush marker first on ext4 as well (the
    /// REFERENCE's models: a reordering `posix` finds can happen on the
    /// others too): the ext4 model's 0 is no promise.
    func testTwoFilesOverwrittenInPlaceWithoutASyncAreFoundReorderedOnlyUnderPosix() throws {
        try Data("payload 0\n".utf8).write(to: URL(fileURLWithPath: container + "/payload"))
        try Data("marker 0\n".utf8).write(to: URL(fileURLWithPath: container + "/marker"))
        let app = try file("pair-app", """
            #!/bin/sh
            cd "$PURGEFS_MOUNT" || exit 1
            printf 'payload 1\\n' | dd of=payload conv=notrunc status=none || exit 1
            printf 'marker 1\\n' | dd of=marker conv=notrunc status=none || exit 1
            """)
        let check = try file("pair-check", """
            #!/bin/sh
            cd "$PURGEFS_CRASH_STATE" || exit 1
            marker=$(cat marker) payload=$(cat payload)
            if [ "$marker" = "marker 1" ] && [ "$payload" != "payload 1" ]; then echo "marker 1 but payload is '$payload'" >&2; exit 1; fi
            """)
        let all = try explore([app], check: check, ["--models", "all"])
        XCTAssertEqual(all.failures.map(\.state), ["2/reordered-2"], "the marker's page alone")
        XCTAssertEqual(all.failures.map(\.models), [["posix"]])
        XCTAssertEqual(all.failures.map(\.message), ["marker 1 but payload is 'payload 0'"])
        let torn = try explore([app], check: check, ["--torn"])
        XCTAssertEqual(torn.states, 5, "names-kept at both points, torn-1 at 1, torn-1 and torn-2 at 2")
        XCTAssertEqual(torn.failures.map(\.state), [], "a prefix in write order has the payload whenever it has the marker")
    }
}
