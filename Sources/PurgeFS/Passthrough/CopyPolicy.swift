/// Asked by `copy_file_range` before it copies: the copy may be made
/// another way (a whole file into an empty one becomes a clone). The mount
/// registers one (`WholeFileCloning`, in Clones/), as it registers the
/// growth policy, so the copy path names no feature.
protocol CopyPolicy: Sendable {
    /// Makes the copy its own way, returning the bytes "copied", or nil
    /// when the handler copies.
    func copy(
        from source: OpenFile, at sourceOffset: Int64, to destination: OpenFile, at offset: Int64,
        length: Int, flags: UInt32
    ) -> Int?
}
