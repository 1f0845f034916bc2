import PurgeCore
import PurgeSys

/// The root's space names: the device's figures (`capacity`, `external`,
/// `available` and the rest of `SpaceStatus`), what purging has done, and
/// the controls that change the device or purge now.
struct SpaceAttributes: AttributeProvider {
    let state: ContainerState
    /// The shared device this container is on (`device=`): its figures are
    /// read before answering, and a change of size is checked against and
    /// written for every member.
    let device: SharedDevice?
    let monitor: SpaceMonitor
    let purger: Purger
    let noSpaceReplies: NoSpaceReplies

    var attributes: [PurgeAttribute] {
        [.capacity, .external, .available, .containerUsed, .deviceUsed, .availableImportant, .availableOpportunistic,
         .purgedBytes, .purgedFiles, .enospc, .peakUsed, .monitorRounds, .purge]
    }

    func value(of attribute: PurgeAttribute, on inode: Inode) throws(Errno) -> String {
        switch attribute {
        case .capacity, .external, .available, .containerUsed, .deviceUsed, .availableImportant, .availableOpportunistic:
            device?.readNeighbours(state)  // another member's write shows at once
            let status = state.status()
            switch attribute {
            case .capacity: return String(status.capacity)
            case .external: return String(status.external)
            case .available: return String(status.available)
            case .containerUsed: return String(status.containerUsed)
            case .deviceUsed: return String(status.deviceUsed)
            case .availableImportant: return String(status.availableImportant)
            default: return String(status.availableOpportunistic)
            }
        case .purgedBytes: return String(state.purgeCounters.bytes)
        case .purgedFiles: return String(state.purgeCounters.files)
        case .enospc: return String(noSpaceReplies.total)
        case .peakUsed: return String(state.peakUsed)
        case .monitorRounds: return String(monitor.rounds.load(ordering: .acquiring))
        default: throw Errno.noData
        }
    }

    func set(_ attribute: PurgeAttribute, on inode: Inode, to value: AttributeValue) throws(Errno) {
        let text = value.text
        switch attribute {
        case .capacity, .external:
            // The rule the mount options and `purgefs space` follow; the reason goes to the daemon log.
            do throws(OptionError) {
                let bytes: UInt64
                do throws(ValueError) {
                    bytes = attribute == .capacity ? try CapacityModel.capacity(parsing: text) : try CapacityModel.external(parsing: text)
                } catch {
                    throw OptionError.invalidValue(option: attribute.rawValue, value: text, reason: error)
                }
                if let device {
                    // A shared device: checked against every member's usage, written for all.
                    try device.change(capacity: attribute == .capacity ? bytes : nil,
                                      external: attribute == .external ? bytes : nil, state)
                } else if attribute == .capacity {
                    try state.changeDevice(capacity: bytes)
                } else {
                    try state.changeDevice(external: bytes)
                }
            } catch {
                Diagnostics.note("refused \(attribute.fullName)=\(text.prefix(64)): \(error)")
                throw Errno.invalidArgument
            }
            monitor.kick()
        case .purge:
            if text == "all" {
                purger.purge(.all, reason: .manual)
            } else {
                guard let size = try? ByteSize(parsing: text) else { throw Errno.invalidArgument }
                purger.purge(.bytes(size.bytes), reason: .manual)
            }
        default:
            throw Errno.invalidArgument
        }
    }
}
