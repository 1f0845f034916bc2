import PurgeCore

extension MountTable {
    /// This process's mount namespace as the kernel lists it now. Reads
    /// `/proc/self/mountinfo` with `open(2)` and `read(2)`.
    public static func current() throws(Errno) -> MountTable {
        MountTable(parsing: String(decoding: try FileDescriptor.readFile("/proc/self/mountinfo"), as: UTF8.self))
    }
}
