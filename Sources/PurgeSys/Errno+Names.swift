import Glibc

extension Errno {
    /// The errno of a C name such as `EIO`, for the names fault rules may
    /// give (`FaultAction.errnoNames`); nil for another.
    public init?(named name: String) {
        guard let value = Self.byName[name] else { return nil }
        self.init(value)
    }

    private static let byName: [String: Int32] = [
        "EPERM": EPERM, "ENOENT": ENOENT, "EINTR": EINTR, "EIO": EIO, "ENXIO": ENXIO, "EBADF": EBADF,
        "EAGAIN": EAGAIN, "ENOMEM": ENOMEM, "EACCES": EACCES, "EFAULT": EFAULT, "EBUSY": EBUSY, "EEXIST": EEXIST,
        "EXDEV": EXDEV, "ENODEV": ENODEV, "ENOTDIR": ENOTDIR, "EISDIR": EISDIR, "EINVAL": EINVAL, "ENFILE": ENFILE,
        "EMFILE": EMFILE, "ETXTBSY": ETXTBSY, "EFBIG": EFBIG, "ENOSPC": ENOSPC, "ESPIPE": ESPIPE, "EROFS": EROFS,
        "EMLINK": EMLINK, "ERANGE": ERANGE, "EDEADLK": EDEADLK, "ENAMETOOLONG": ENAMETOOLONG, "ENOLCK": ENOLCK,
        "ENOSYS": ENOSYS, "ENOTEMPTY": ENOTEMPTY, "ELOOP": ELOOP, "ENODATA": ENODATA, "ETIME": ETIME,
        "EOVERFLOW": EOVERFLOW, "EBADMSG": EBADMSG, "EOPNOTSUPP": EOPNOTSUPP, "ETIMEDOUT": ETIMEDOUT,
        "ESTALE": ESTALE, "EDQUOT": EDQUOT, "ECANCELED": ECANCELED, "ENOTCONN": ENOTCONN, "EUCLEAN": EUCLEAN,
        "EREMOTEIO": EREMOTEIO, "ENOMEDIUM": ENOMEDIUM,
    ]
}
