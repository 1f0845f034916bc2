extension CrashExploration {
    /// The container as the command saw it right after operation `point`
    /// (0: before the first, the base copy; `operationCount`: at its end):
    /// every name and every byte, nothing lost to a crash. What
    /// `purgefs explore --golden` takes the view of at each point the
    /// command acknowledged something. `points` ascending (others are
    /// skipped); one pass over the operations, one state held at a time
    /// (a run that prints a line per file it makes has as many points as
    /// files, and each state holds them all).
    public func forEachLiveState<Failure: Error>(_ points: [Int], _ body: (State) throws(Failure) -> Void) throws(Failure) {
        var simulation = Simulation(initial: initial, model: model)
        var applied = 0
        for point in points where point >= applied && point <= operationCount {
            while applied < point {
                simulation.apply(operations[applied], point: applied + 1)
                applied += 1
            }
            try body(simulation.liveState(point: point, outputLength: outputLength(at: point)))
        }
    }
}

extension CrashExploration.Simulation {
    /// Every name now, every file with what was written to it.
    func liveState(point: Int, outputLength: UInt64) -> CrashExploration.State {
        var entries: [CrashExploration.Entry] = []
        for (path, id) in current.walk() {
            guard let node = current.node(id) else { continue }
            entries.append(CrashExploration.Entry(path: path, kind: node.kind, mode: node.mode, identity: id,
                                                  image: node.kind == .file ? (contents[id] ?? .empty) : nil, target: node.target))
        }
        return CrashExploration.State(id: CrashExploration.StateID(point: point, variant: .namesKept), entries: entries,
                                      operation: descriptions.last ?? "", lastDurable: lastDurable, lost: [], lostCount: 0,
                                      outputLength: outputLength)
    }
}
