import XCTest
import PurgeCore

final class MountOptionsParsingTests: XCTestCase {
    private func assertRefused(_ list: [String], _ expected: OptionError, line: UInt = #line) {
        XCTAssertThrowsError(try MountOptions.parse(list), line: line) { error in
            XCTAssertEqual(error as? OptionError, expected, "for \(list)", line: line)
        }
    }

    func testDefaults() throws {
        let options = try MountOptions.parse([])
        XCTAssertEqual(options, MountOptions())
        XCTAssertNil(options.capacity)
        XCTAssertEqual(options.external, 0)
        XCTAssertEqual(options.low, .percent(10))
        XCTAssertEqual(options.high, .percent(20))
        XCTAssertEqual(options.purgeableZones, ["Library/Caches", "caches", "tmp"])
        XCTAssertNil(options.cloud)
        XCTAssertEqual(options.ubiquitousZones, ["Documents"])
        XCTAssertNil(options.stateDirectory)
        XCTAssertNil(options.bundle)
        XCTAssertEqual(options.metricsIntervalSeconds, 3600)
        XCTAssertFalse(options.optimizeStorage)
        XCTAssertTrue(options.passthrough, "kernel passthrough wherever the kernel registers backing files")
        XCTAssertEqual(options.uring, .pinned, "FUSE over io_uring wherever the kernel offers it, each CPU's threads on it")
        XCTAssertEqual(options.fuseOptions, [])
    }

    func testEveryPurgefsOption() throws {
        let options = try MountOptions.parse([
            "capacity=1G,external=100M,low=64M,high=25%,purgeable=./cache//x/:tmp",
            "cloud=/srv/cloud/,ubiquitous=Docs:Shared/iCloud,state=/var/lib/purgefs/app",
            "bundle=App.app,metrics_interval=15m,optimize_storage,passthrough=off",
        ])
        XCTAssertEqual(options.capacity, 1 << 30)
        XCTAssertEqual(options.external, 100 << 20)
        XCTAssertEqual(options.low, .bytes(64 << 20))
        XCTAssertEqual(options.high, .percent(25))
        XCTAssertEqual(options.purgeableZones, ["cache/x", "tmp"])
        XCTAssertEqual(options.cloud, .directory("/srv/cloud"))
        XCTAssertEqual(options.ubiquitousZones, ["Docs", "Shared/iCloud"])
        XCTAssertEqual(options.stateDirectory, "/var/lib/purgefs/app")
        XCTAssertEqual(options.bundle, "App.app")
        XCTAssertEqual(options.metricsIntervalSeconds, 900)
        XCTAssertTrue(options.optimizeStorage)
        XCTAssertFalse(options.passthrough)
        XCTAssertTrue(try MountOptions.parse(["passthrough=off,passthrough=on"]).passthrough)
        XCTAssertEqual(try MountOptions.parse(["uring=off"]).uring, .off)
        XCTAssertEqual(try MountOptions.parse(["uring=pinned"]).uring, .pinned)
        XCTAssertEqual(try MountOptions.parse(["uring=off,uring=on"]).uring, .on)
    }

    func testRepeatedOptionsLastWins() throws {
        let options = try MountOptions.parse(["capacity=1G,purgeable=a:b", "capacity=2G", "purgeable=c,low=1%,low=2%"])
        XCTAssertEqual(options.capacity, 2 << 30)
        XCTAssertEqual(options.purgeableZones, ["c"])
        XCTAssertEqual(options.low, .percent(2))
    }

    func testEmptyZoneListMeansNoZones() throws {
        let options = try MountOptions.parse(["purgeable=,ubiquitous="])
        XCTAssertEqual(options.purgeableZones, [])
        XCTAssertEqual(options.ubiquitousZones, [])
    }

    func testDuplicateZonesAreDropped() throws {
        XCTAssertEqual(try MountOptions.parse(["purgeable=tmp:./tmp/:caches"]).purgeableZones, ["tmp", "caches"])
    }

    func testFusePassThroughKeepsOrderAndText() throws {
        let options = try MountOptions.parse([
            "allow_other,default_permissions,ro", "rw,auto_unmount,fsname=my\\,app,subtype=purgefs,max_read=131072",
            "nodev,nosuid,dev,suid,noexec,exec,noatime,atime,sync,async,dirsync,debug,context=system_u:object_r:tmp_t:s0",
        ])
        XCTAssertEqual(options.fuseOptions, [
            "allow_other", "default_permissions", "ro", "rw", "auto_unmount", "fsname=my,app", "subtype=purgefs",
            "max_read=131072", "nodev", "nosuid", "dev", "suid", "noexec", "exec", "noatime", "atime", "sync",
            "async", "dirsync", "debug", "context=system_u:object_r:tmp_t:s0",
        ])
        XCTAssertTrue(options.fuseOptionString.hasPrefix("allow_other,default_permissions,ro,rw,auto_unmount,fsname=my\\,app,"))
    }

    func testFstabWordsAreAcceptedAndDropped() throws {
        let options = try MountOptions.parse([
            "defaults,auto,noauto,nofail,_netdev,user,users,nouser,owner,group,relatime",
            "x-systemd.automount,x-gvfs-show,comment=systemd.foo,user=alice,capacity=1G",
        ])
        XCTAssertEqual(options.fuseOptions, [])
        XCTAssertEqual(options.capacity, 1 << 30)
    }

    func testUnknownOptions() {
        assertRefused(["capcity=1G"], .unknownOption("capcity"))
        assertRefused(["kernel_cache"], .unknownOption("kernel_cache"))
        assertRefused(["strictatime"], .unknownOption("strictatime"))
        assertRefused(["blkdev"], .unknownOption("blkdev"))
        assertRefused(["ro,bogus=1"], .unknownOption("bogus"))
        assertRefused(["=5"], .unknownOption(""))
        assertRefused(["Capacity=1G"], .unknownOption("Capacity"))
    }

    func testMissingAndUnexpectedValues() {
        assertRefused(["capacity"], .missingValue(option: "capacity"))
        assertRefused(["state"], .missingValue(option: "state"))
        assertRefused(["fsname"], .missingValue(option: "fsname"))
        assertRefused(["optimize_storage=1"], .unexpectedValue(option: "optimize_storage", value: "1"))
        assertRefused(["optimize_storage="], .unexpectedValue(option: "optimize_storage", value: ""))
        assertRefused(["allow_other=yes"], .unexpectedValue(option: "allow_other", value: "yes"))
        assertRefused(["defaults=1"], .unexpectedValue(option: "defaults", value: "1"))
    }

    func testBadValues() {
        assertRefused(["capacity="], .invalidValue(option: "capacity", value: "", reason: .empty))
        assertRefused(["capacity=0"], .invalidValue(option: "capacity", value: "0", reason: .zero))
        assertRefused(["capacity=-1G"], .invalidValue(option: "capacity", value: "-1G", reason: .negative))
        assertRefused(["capacity=1X"], .invalidValue(option: "capacity", value: "1X", reason: .notASize))
        assertRefused(["capacity=99999999T"], .invalidValue(option: "capacity", value: "99999999T", reason: .aboveMaximumSize))
        assertRefused(["external=lots"], .invalidValue(option: "external", value: "lots", reason: .notASize))
        assertRefused(["low=0%"], .invalidValue(option: "low", value: "0%", reason: .percentOutOfRange))
        assertRefused(["high=150%"], .invalidValue(option: "high", value: "150%", reason: .percentOutOfRange))
        assertRefused(["metrics_interval=0"], .invalidValue(option: "metrics_interval", value: "0", reason: .lessThanOneSecond))
        assertRefused(["metrics_interval=1w"], .invalidValue(option: "metrics_interval", value: "1w", reason: .notADuration))
        assertRefused(["max_read=big"], .invalidValue(option: "max_read", value: "big", reason: .notASize))
        assertRefused(["max_read=4294967296"], .invalidValue(option: "max_read", value: "4294967296", reason: .notASize))
        assertRefused(["fsname="], .invalidValue(option: "fsname", value: "", reason: .empty))
        assertRefused(["subtype=other"], .unsupportedSubtype("other"))
        assertRefused(["passthrough=yes"], .invalidValue(option: "passthrough", value: "yes", reason: .notOnOrOff))
        assertRefused(["passthrough"], .missingValue(option: "passthrough"))
        assertRefused(["uring=1"], .invalidValue(option: "uring", value: "1", reason: .notOnPinnedOrOff))
        assertRefused(["uring"], .missingValue(option: "uring"))
    }

    func testZonePaths() {
        assertRefused(["purgeable=/tmp"], .invalidRelativePath(option: "purgeable", path: "/tmp", reason: .absolute))
        assertRefused(["purgeable=a::b"], .invalidRelativePath(option: "purgeable", path: "", reason: .empty))
        assertRefused(["purgeable=tmp:"], .invalidRelativePath(option: "purgeable", path: "", reason: .empty))
        assertRefused(["ubiquitous=../x"], .invalidRelativePath(option: "ubiquitous", path: "../x", reason: .parentReference))
        assertRefused(["ubiquitous=a/../../b"], .invalidRelativePath(option: "ubiquitous", path: "a/../../b", reason: .parentReference))
        assertRefused(["purgeable=."], .invalidRelativePath(option: "purgeable", path: ".", reason: .containerItself))
        assertRefused(["bundle="], .invalidRelativePath(option: "bundle", path: "", reason: .empty))
        assertRefused(["bundle=/App"], .invalidRelativePath(option: "bundle", path: "/App", reason: .absolute))
    }

    func testAbsolutePaths() {
        assertRefused(["cloud=remote"], .notAbsolutePath(option: "cloud", path: "remote"))
        assertRefused(["state=./state"], .notAbsolutePath(option: "state", path: "./state"))
        assertRefused(["cloud="], .invalidValue(option: "cloud", value: "", reason: .empty))
    }

    func testRcloneRemotes() throws {
        XCTAssertEqual(try MountOptions.parse(["cloud=rclone:s3:bucket/app"]).cloud, .rclone(remote: "s3", path: "bucket/app"))
        XCTAssertEqual(try MountOptions.parse(["cloud=rclone:my-dav:"]).cloud, .rclone(remote: "my-dav", path: ""))
        XCTAssertEqual(CloudLocation.rclone(remote: "s3", path: "b/p").description, "rclone:s3:b/p")
        for bad in ["rclone:", "rclone:s3", "rclone::path", "rclone:-x:p", "rclone:a/b:p", "rclone:a=b:p"] {
            assertRefused(["cloud=" + bad], .invalidValue(option: "cloud", value: bad, reason: .notARcloneRemote))
        }
    }

    func testDescriptionsNameTheOptionAndValue() {
        XCTAssertEqual(OptionError.unknownOption("bogus").description, "unknown mount option 'bogus'")
        XCTAssertEqual(
            OptionError.invalidValue(option: "capacity", value: "12Q", reason: .notASize).description,
            "capacity=12Q: not a size (bytes, or a number with K, M, G or T)")
        XCTAssertEqual(
            OptionError.invalidRelativePath(option: "purgeable", path: "/tmp", reason: .absolute).description,
            "purgeable: '/tmp' must be relative to the container, not absolute")
        XCTAssertEqual(
            OptionError.unexpectedValue(option: "optimize_storage", value: "1").description,
            "mount option 'optimize_storage' takes no value (got optimize_storage=1)")
    }
}
