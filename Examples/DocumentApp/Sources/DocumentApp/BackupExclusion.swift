// The one call of the app that a file importing Foundation beside PurgeKit
// cannot make PurgeKit's: `setResourceValues(_:)` takes a value of
// Foundation's own type, so Swift finds Foundation's method and PurgeKit's
// with one signature, shadows neither (both modules are imported directly)
// and ranks neither first: "ambiguous use of 'setResourceValues'", a
// compile error, never Foundation's silent answer (it drops
// `isExcludedFromBackup` on Linux). Here PurgeKit alone is imported (it
// re-exports Foundation), so its method shadows Foundation's.
#if canImport(PurgeKit)
import PurgeKit
#else
import Foundation
#endif

/// Keeps `url` out of backups (iCloud's and the device's).
func excludeFromBackup(_ url: inout URL) throws {
    var values = URLResourceValues()
    values.isExcludedFromBackup = true
    try url.setResourceValues(values)
}
