import PurgeCore

/// The one generator of every test target (`TestSupport`): PurgeCore's
/// SplitMix64, which fault rules draw from too.
public typealias SeededGenerator = SplitMix64
