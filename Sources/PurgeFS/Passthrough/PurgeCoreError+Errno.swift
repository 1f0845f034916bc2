import PurgeCore
import PurgeSys

extension Errno {
    /// The errno a request gets when the ledger refuses what it asked.
    /// Exhaustive on purpose: a new core error needs a decision here.
    init(_ error: PurgeCoreError) {
        switch error {
        case .unknownEntry: self = .noEntry
        case .entryExists, .rootExists: self = .exists
        case .notADirectory: self = .notDirectory
        case .notAFile: self = .isDirectory
        case .notLinked: self = .noEntry
        case .directoryNotEmpty: self = .notEmpty
        case .wouldCreateCycle: self = .invalidArgument
        case .malformedSnapshot: self = .ioError
        // Figures only: a close never fails for it (logged as drift), so never a request.
        case .notOpen: self = .ioError
        }
    }
}
