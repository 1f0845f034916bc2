/// A moment on the monotonic clock that a wait must not outlast (a change
/// of the wall clock neither shortens nor stretches it).
public struct Deadline: Sendable {
    private let end: ContinuousClock.Instant

    public init(milliseconds: Int) {
        end = ContinuousClock.now.advanced(by: .milliseconds(milliseconds))
    }

    public var hasPassed: Bool { ContinuousClock.now >= end }
}
