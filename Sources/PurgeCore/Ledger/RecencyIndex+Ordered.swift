extension RecencyIndex {
    /// The items from least to most recently used, without changing the index.
    ///
    /// A best-first walk of the heap: the next item is the smallest among the
    /// children of those already yielded, so taking the first k items costs
    /// O(k log k) whatever the size of the index. This is what lets the
    /// planner stay pure (it plans on the live index, pops nothing) and still
    /// pay only for the victims it picks.
    public func ordered() -> OrderedItems { OrderedItems(heap: heap) }

    public struct OrderedItems: Sequence, Sendable {
        let heap: [Entry]

        public func makeIterator() -> Iterator { Iterator(heap: heap) }

        public struct Iterator: IteratorProtocol, Sendable {
            private let heap: [Entry]
            /// Heap positions not yet yielded whose parent has been: a small
            /// min-heap ordered by the entries they point at.
            private var frontier: [Int]
            /// Positions taken from the frontier so far; tests read it to
            /// check the walk's shape.
            private(set) var examined = 0

            init(heap: [Entry]) {
                self.heap = heap
                self.frontier = heap.isEmpty ? [] : [0]
            }

            public mutating func next() -> (item: Item, stamp: UInt64)? {
                guard let top = frontier.first else { return nil }
                let last = frontier.removeLast()
                if !frontier.isEmpty {
                    frontier[0] = last
                    siftDown(0)
                }
                examined += 1
                let left = 2 * top + 1
                if left < heap.count { push(left) }
                if left + 1 < heap.count { push(left + 1) }
                return (heap[top].item, heap[top].stamp)
            }

            private mutating func push(_ position: Int) {
                frontier.append(position)
                siftUp(frontier.count - 1)
            }

            private func precedes(_ a: Int, _ b: Int) -> Bool {
                heap[frontier[a]].precedes(heap[frontier[b]])
            }

            private mutating func siftUp(_ start: Int) {
                var index = start
                while index > 0 {
                    let parent = (index - 1) / 2
                    guard precedes(index, parent) else { return }
                    frontier.swapAt(index, parent)
                    index = parent
                }
            }

            private mutating func siftDown(_ start: Int) {
                var index = start
                while true {
                    let left = 2 * index + 1
                    guard left < frontier.count else { return }
                    let right = left + 1
                    let child = right < frontier.count && precedes(right, left) ? right : left
                    guard precedes(child, index) else { return }
                    frontier.swapAt(index, child)
                    index = child
                }
            }
        }
    }
}
