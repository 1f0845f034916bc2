import Foundation
#if canImport(PurgeKit)
import PurgeKit
#endif

/// Keeps `url` out of backups (iCloud's and the device's). On a purgefs
/// mount PurgeKit writes `user.purgefs.excluded_from_backup`; Foundation on
/// Linux alone would drop the value.
func excludeFromBackup(_ url: inout URL) throws {
    var values = URLResourceValues()
    values.isExcludedFromBackup = true
    try url.setResourceValues(values)
}
