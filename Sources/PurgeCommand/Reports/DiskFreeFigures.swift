import PurgeEngines

/// The figures `df` shows for a filesystem, from its `statvfs`, and the way
/// `df -h` prints them: what the demo shows of a mount's device.
struct DiskFreeFigures: Equatable {
    var size: UInt64
    var used: UInt64
    var available: UInt64

    /// From `statvfs` fields: size `f_blocks`, used `f_blocks - f_bfree`,
    /// available `f_bavail`, all in `f_frsize` units (as df computes them).
    init(fragmentSize: UInt64, blocks: UInt64, freeBlocks: UInt64, availableBlocks: UInt64) {
        size = blocks.multipliedClamped(by: fragmentSize)
        used = blocks.clampedMinus(freeBlocks).multipliedClamped(by: fragmentSize)
        available = availableBlocks.multipliedClamped(by: fragmentSize)
    }

    init(size: UInt64, used: UInt64, available: UInt64) {
        self.size = size
        self.used = used
        self.available = available
    }

    /// `Use%` as df computes it: used / (used + available), rounded up.
    var usePercent: UInt64 {
        let total = UInt128(used) + UInt128(available)
        return total == 0 ? 0 : UInt64((UInt128(used) * 100 + total - 1) / total)
    }

    /// `df -h`'s two lines (header and figures) for `source` mounted on `mountPoint`.
    func table(source: String, mountPoint: String) -> [String] {
        let header = ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on"]
        let values = [source, Self.human(size), Self.human(used), Self.human(available), "\(usePercent)%", mountPoint]
        let sourceWidth = max(header[0].count, source.count)
        func line(_ cells: [String]) -> String {
            HumanText.left(cells[0], sourceWidth) + " " + HumanText.right(cells[1], 5) + " " + HumanText.right(cells[2], 5)
                + " " + HumanText.right(cells[3], 5) + " " + HumanText.right(cells[4], 4) + " " + cells[5]
        }
        return [line(header), line(values)]
    }

    /// `df -h` style: powers of 1024 with one letter, rounded up, with one
    /// decimal below 10 (`53M`, `3.5M`, `64M`, `0`).
    static func human(_ bytes: UInt64) -> String {
        let suffixes = ["K", "M", "G", "T", "P", "E"]
        guard bytes >= 1024 else { return "\(bytes)" }
        var exponent = 0
        while exponent < suffixes.count - 1, bytes >= UInt64(1) << (10 * (exponent + 2)) { exponent += 1 }
        let unit = UInt128(1) << (10 * (exponent + 1))
        let tenths = (UInt128(bytes) * 10 + unit - 1) / unit
        if tenths < 100 { return "\(tenths / 10).\(tenths % 10)\(suffixes[exponent])" }
        let whole = (UInt128(bytes) + unit - 1) / unit
        if whole >= 1024, exponent < suffixes.count - 1 { return "1.0" + suffixes[exponent + 1] }
        return "\(whole)\(suffixes[exponent])"
    }
}
