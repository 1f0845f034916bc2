import PurgeSys

/// What making a linked clone needs of the mount, and no more: the ledger
/// (the name of a file its opener did not make), the namespace locks and
/// the container's root (to link the data under its name, under its
/// directory's lock), and the kernel passthrough (a file the kernel reads
/// from its backing file is never a clone's destination). Made once at the
/// mount's assembly, held by `WholeFileCloning`.
struct CloneMaking: Sendable {
    let state: ContainerState
    let locks: NamespaceLocks
    let root: FileDescriptor
    let kernelPassthrough: KernelPassthrough
}
