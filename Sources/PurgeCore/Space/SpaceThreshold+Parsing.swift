extension SpaceThreshold {
    /// Reads `N%` (0 < N ≤ 100, decimals allowed: `12.5%`) or a size as
    /// `ByteSize` reads it. A byte threshold may be 0 (`low=0` never
    /// triggers the monitor); a percentage may not, as SPEC bounds it.
    public init(parsing text: String) throws(ValueError) {
        if text.isEmpty { throw .empty }
        if text.first == "-" { throw .negative }
        guard text.hasSuffix("%") else {
            do throws(ValueError) {
                self = .bytes(try ByteSize(parsing: text).bytes)
            } catch .notASize {
                throw .notAThreshold
            }
            return
        }
        let digits = text.dropLast()
        guard let (number, rest) = try DecimalNumber.leading(digits), rest.isEmpty else {
            throw .notAThreshold
        }
        let share = number.doubleValue
        guard share > 0, share <= 100 else { throw .percentOutOfRange }
        self = .percent(share)
    }

    /// The threshold as it would be written in `-o`: `10%`, `12.5%`, `1 GiB`.
    public var displayText: String {
        switch self {
        case .bytes(let value): return ByteSize.format(value)
        case .percent(let share):
            let whole = share.rounded(.towardZero)
            return share == whole ? "\(UInt64(whole))%" : "\(share)%"
        }
    }

    /// The threshold exactly, as `init(parsing:)` reads it back: `10%`,
    /// `12.5%`, `1073741824` (bytes, where `displayText` rounds).
    public var exactText: String {
        switch self {
        case .bytes(let value): return String(value)
        case .percent: return displayText
        }
    }
}
