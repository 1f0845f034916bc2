/// Why a fault rule, or a line of a rules file, was refused: one line,
/// naming the flag and the value.
public struct FaultRuleError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    /// The same error, as found on `line` of a rules file.
    func on(line: Int) -> FaultRuleError {
        FaultRuleError("line \(line): \(message)")
    }
}
