// `import PurgeKit` gives the app Foundation too, as `import MetricKit` does
// on Apple platforms: the guide's samples then need no other import.
@_exported import Foundation
