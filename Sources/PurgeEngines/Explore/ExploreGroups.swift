import PurgeCore

/// Explore's failed states in groups: those with the same operation at k
/// (a write's byte range left out: the file and the call are what
/// matter), the same last durable operation and the same message (the
/// checker's last line of stderr, or `--golden`'s verdict) fail the same
/// way. Corruption-like groups come first, then lost acknowledgments
/// (`ExploreChecker.Kind`), each kind in the order its first state was
/// explored; numbered from 1 in that order. A group's smallest state is the
/// one that lost the fewest items, the first explored among equals: the
/// one to look at first.
struct ExploreGroups {
    struct Group {
        var number: Int
        var kind: ExploreChecker.Kind
        var operation: String
        var lastDurable: (point: Int, text: String)?
        var message: String
        /// Indices in the results, in exploration order.
        var members: [Int]
        var smallest: Int
    }

    let groups: [Group]
    /// The group number of each failed result (by index).
    let numbers: [Int: Int]

    init(_ results: [ExploreChecker.Result]) {
        struct Key: Hashable {
            var operation: String
            var lastDurable: Int?
            var message: String
        }
        var found: [Key: Int] = [:]
        var groups: [Group] = []
        for (index, result) in results.enumerated() {
            guard let failure = result.failure else { continue }
            let key = Key(operation: Self.operation(failure.operation), lastDurable: failure.lastDurable?.point, message: result.stderr)
            if let position = found[key] {
                groups[position].members.append(index)
                if failure.lostCount < results[groups[position].smallest].failure?.lostCount ?? .max { groups[position].smallest = index }
            } else {
                found[key] = groups.count
                groups.append(Group(number: 0, kind: failure.kind, operation: key.operation, lastDurable: failure.lastDurable,
                                    message: result.stderr, members: [index], smallest: index))
            }
        }
        // Stable: the order of first appearance within each kind.
        let ordered = groups.filter { $0.kind == .corruption } + groups.filter { $0.kind == .lostAcknowledgment }
        self.groups = ordered.enumerated().map { offset, group in
            var group = group
            group.number = offset + 1
            return group
        }
        var numbers: [Int: Int] = [:]
        for group in self.groups { for index in group.members { numbers[index] = group.number } }
        self.numbers = numbers
    }

    /// An operation as groups compare it: `write PATH: bytes A-B` is `write PATH`.
    static func operation(_ text: String) -> String {
        guard text.hasPrefix("write ") else { return text }
        let marker = Array(": bytes ".utf8), bytes = Array(text.utf8)
        guard bytes.count >= marker.count,
              let start = stride(from: bytes.count - marker.count, through: 0, by: -1).first(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) })
        else { return text }
        return String(decoding: bytes[..<start], as: UTF8.self)
    }
}
