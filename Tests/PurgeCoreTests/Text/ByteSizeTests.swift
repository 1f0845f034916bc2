import XCTest
import PurgeCore

final class ByteSizeTests: XCTestCase {
    private func bytes(_ text: String) throws -> UInt64 { try ByteSize(parsing: text).bytes }

    private func assertRefused(_ text: String, _ expected: ValueError, line: UInt = #line) {
        XCTAssertThrowsError(try ByteSize(parsing: text), line: line) { error in
            XCTAssertEqual(error as? ValueError, expected, "for '\(text)'", line: line)
        }
    }

    func testPlainBytes() throws {
        XCTAssertEqual(try bytes("0"), 0)
        XCTAssertEqual(try bytes("4096"), 4096)
        XCTAssertEqual(try bytes("512B"), 512)
        XCTAssertEqual(try bytes("007"), 7)
    }

    func testUnitsArePowersOf1024() throws {
        XCTAssertEqual(try bytes("1K"), 1024)
        XCTAssertEqual(try bytes("64k"), 64 << 10)
        XCTAssertEqual(try bytes("3M"), 3 << 20)
        XCTAssertEqual(try bytes("1G"), 1 << 30)
        XCTAssertEqual(try bytes("2T"), 2 << 40)
    }

    func testOptionalByteSuffixMeansTheSame() throws {
        XCTAssertEqual(try bytes("1GB"), 1 << 30)
        XCTAssertEqual(try bytes("1GiB"), 1 << 30)
        XCTAssertEqual(try bytes("1gib"), 1 << 30)
        XCTAssertEqual(try bytes("5MB"), 5 << 20)
    }

    func testFractionsWithAUnitRoundDown() throws {
        XCTAssertEqual(try bytes("1.5G"), 3 << 29)
        XCTAssertEqual(try bytes("0.5K"), 512)
        XCTAssertEqual(try bytes("0.1K"), 102) // 102.4 rounded down
        XCTAssertEqual(try bytes("1.000000000000000000000001T"), 1 << 40)
    }

    func testRefusals() {
        assertRefused("", .empty)
        assertRefused("-1", .negative)
        assertRefused("-1G", .negative)
        assertRefused("+1G", .notASize)
        assertRefused("G", .notASize)
        assertRefused("12Q", .notASize)
        assertRefused("1 G", .notASize)
        assertRefused(" 1G", .notASize)
        assertRefused("1G ", .notASize)
        assertRefused("1e9", .notASize)
        assertRefused("0x10", .notASize)
        assertRefused("1P", .notASize)
        assertRefused("1KK", .notASize)
        assertRefused(".5G", .notASize)
        assertRefused("5.G", .notASize)
        assertRefused("1.5", .fractionOfAByte)
        assertRefused("1.5B", .fractionOfAByte)
        assertRefused("١٢", .notASize) // Arabic-Indic digits are not ASCII digits
        assertRefused("1.0000000000000000000000001G", .tooManyDecimals)
    }

    func testNothingAboveTheMaximumIsTaken() throws {
        XCTAssertEqual(ByteSize.maximum, 1 << 62)
        XCTAssertEqual(try bytes("4611686018427387904"), ByteSize.maximum)
        XCTAssertEqual(try bytes("4194304T"), ByteSize.maximum)
        XCTAssertEqual(try bytes("4194303.99999999999999999T"), ByteSize.maximum - 1) // rounds down
        assertRefused("4611686018427387905", .aboveMaximumSize)
        assertRefused("4194304.000000001T", .aboveMaximumSize)
        assertRefused("18446744073709551615", .aboveMaximumSize)
        assertRefused("18446744073709551614", .aboveMaximumSize)
        // Past 64 bits: the same refusal, not another one.
        assertRefused("18446744073709551616", .aboveMaximumSize)
        assertRefused("99999999999999999999999", .aboveMaximumSize)
        assertRefused("16777216T", .aboveMaximumSize)
        XCTAssertEqual("\(ValueError.aboveMaximumSize)", "more than 4 EiB (2^62 bytes), the largest size purgefs takes")
        // Every door that reads a SIZE reads it here.
        XCTAssertThrowsError(try CapacityModel.capacity(parsing: "18446744073709551615"))
        XCTAssertThrowsError(try CapacityModel.external(parsing: "18446744073709551614"))
        XCTAssertThrowsError(try SpaceThreshold(parsing: "5000000T"))
        XCTAssertEqual(ByteSize.bounded(ByteSize.maximum), ByteSize.maximum)
        XCTAssertNil(ByteSize.bounded(ByteSize.maximum + 1))
        XCTAssertNil(ByteSize.bounded(nil))
    }

    func testSaturatingArithmetic() {
        XCTAssertEqual(UInt64.max.addingClamped(1), .max)
        XCTAssertEqual(ByteSize.maximum.addingClamped(ByteSize.maximum).addingClamped(ByteSize.maximum), 3 << 62)
        XCTAssertEqual(UInt64(3).subtractingClamped(5), 0)
        XCTAssertEqual(UInt64(5).subtractingClamped(3), 2)
        XCTAssertEqual(ByteSize.maximum.multipliedClamped(by: 4), .max)
        XCTAssertEqual(ByteSize.maximum.multipliedClamped(by: 3), 3 << 62)
    }

    func testFormatting() {
        XCTAssertEqual(ByteSize.format(0), "0 B")
        XCTAssertEqual(ByteSize.format(1023), "1023 B")
        XCTAssertEqual(ByteSize.format(1024), "1 KiB")
        XCTAssertEqual(ByteSize.format(1536), "1.5 KiB")
        XCTAssertEqual(ByteSize.format(3 << 29), "1.5 GiB")
        XCTAssertEqual(ByteSize.format(10 << 40), "10 TiB")
        XCTAssertEqual(ByteSize.format((1 << 20) - 1), "1 MiB") // rounds up into the next unit
        XCTAssertEqual(ByteSize.format((1 << 20) - 60), "1023.9 KiB")
        XCTAssertEqual(ByteSize.format(1 << 60), "1 EiB")
        XCTAssertEqual(ByteSize.format(UInt64.max), "16 EiB")
        XCTAssertEqual(ByteSize(bytes: 2048).description, "2 KiB")
    }

    func testFormattedTextParsesBackToTheSameUnit() throws {
        for value: UInt64 in [1 << 10, 3 << 29, 7 << 40] {
            let text = ByteSize.format(value).split(separator: " ").joined()
            XCTAssertEqual(try bytes(text), value)
        }
    }
}
