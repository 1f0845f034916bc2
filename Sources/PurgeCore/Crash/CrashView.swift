/// What a `--golden` command printed for a state, and how it exited, as
/// a digest: two views are the same when their exit status, length and
/// two independent 64-bit hashes (FNV-1a, and a multiply-rotate hash) are,
/// so the views of thousands of points cost a few words each.
public struct CrashView: Hashable, Sendable {
    public var status: Int32
    public private(set) var length: UInt64 = 0
    private var fnv: UInt64 = 0xcbf2_9ce4_8422_2325
    private var mixed: UInt64 = 0x9e37_79b9_7f4a_7c15

    public init(status: Int32 = 0) {
        self.status = status
    }

    public init(_ bytes: some Sequence<UInt8>, status: Int32) {
        self.status = status
        fold(bytes)
    }

    /// Adds the next bytes of the output.
    public mutating func fold(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            fnv = (fnv ^ UInt64(byte)) &* 0x100_0000_01b3
            mixed = ((mixed ^ UInt64(byte)) &* 0xff51_afd7_ed55_8ccd)
            mixed = (mixed << 29) | (mixed >> 35)
            length &+= 1
        }
    }
}
