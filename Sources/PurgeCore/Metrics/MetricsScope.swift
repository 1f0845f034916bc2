/// Which parts of the container the metrics tell apart: the bundle
/// (`bundle=`, MetricKit's binary files) and the purgeable zones (its cache
/// folder); the rest is data. Paths are relative to the container and
/// normalised, as the mount options give them.
///
/// The parts never overlap: a zone inside another zone is counted with the
/// outer one; a zone inside the bundle is the bundle's; a bundle inside a
/// zone is taken out of that zone.
public struct MetricsScope: Equatable, Sendable {
    public var bundle: String?
    public var zones: [String]

    public init(bundle: String?, zones: [String]) {
        self.bundle = bundle
        self.zones = zones
    }

    /// The zones whose totals count as cache folder: none inside another
    /// listed zone or inside the bundle, each once.
    public var countedZones: [String] {
        var counted: [String] = []
        for zone in zones where !counted.contains(zone) {
            if let bundle, RelativePath.isSameOrInside(zone, bundle) { continue }
            if zones.contains(where: { $0 != zone && RelativePath.isSameOrInside(zone, $0) }) { continue }
            counted.append(zone)
        }
        return counted
    }

    /// The parts from the totals of the root, of the bundle (nil when it
    /// does not exist) and of the zones that exist (by path; missing ones
    /// count as empty).
    public func parts(root: Totals, bundle bundleTotals: Totals?, zones zoneTotals: [String: Totals]) -> MetricsParts {
        var caches = Totals.zero
        for zone in countedZones {
            guard var totals = zoneTotals[zone] else { continue }
            if let bundle, let bundleTotals, RelativePath.isSameOrInside(bundle, zone), bundle != zone {
                totals = totals.clampedMinus(bundleTotals)
            }
            caches = caches + totals
        }
        return MetricsParts(root: root, binary: bundleTotals ?? .zero, caches: caches)
    }
}

/// The totals a sample's figures come from.
public struct MetricsParts: Equatable, Sendable {
    /// The whole container.
    public var root: Totals
    /// The bundle's subtree (zero without one).
    public var binary: Totals
    /// The counted zones together.
    public var caches: Totals

    public init(root: Totals, binary: Totals, caches: Totals) {
        self.root = root
        self.binary = binary
        self.caches = caches
    }
}

extension Totals {
    /// Field by field, not below zero.
    func clampedMinus(_ other: Totals) -> Totals {
        Totals(size: size.subtractingClamped(other.size), files: files.subtractingClamped(other.files),
               allocated: allocated.subtractingClamped(other.allocated),
               purgeable: purgeable.subtractingClamped(other.purgeable),
               purgeableFiles: purgeableFiles.subtractingClamped(other.purgeableFiles),
               cloneSavings: cloneSavings.subtractingClamped(other.cloneSavings))
    }
}
