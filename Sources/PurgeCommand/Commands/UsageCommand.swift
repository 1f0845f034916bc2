import Glibc
import PurgeCore
import PurgeEngines
import PurgeSys

/// `purgefs usage PATH [--json]`: the Settings > Storage breakdown of a
/// purgefs mount, or of a directory inside one.
struct UsageCommand: Subcommand {
    static let name = "usage"
    static let abstract = "Show a container's storage, Settings > Storage style"
    static let help = """
        Usage: purgefs usage PATH [--json] [--html FILE]
               purgefs usage --device NAME [--json] [--html FILE]

        \(TextLayout.paragraph(
            "Shows what the purgefs mount at PATH, or the directory PATH inside one, holds, the way iOS shows an "
            + "app in Settings > General > Storage: the app (the mount's bundle=), Documents, caches and tmp (the "
            + "mount's purgeable zones, each with what purging could free), other data, clone savings, and "
            + "the device, with a bar of the device's space. For a directory inside the mount, the categories "
            + "are the parts of that directory (all of it when it is inside Documents or a zone); the device is "
            + "the mount's. Every figure comes from the user.purgefs.* attributes, exact at the moment of the "
            + "read, however large the tree. Without bundle= the app shows as not set."))

        \(TextLayout.paragraph(
            "With --device NAME: the shared device NAME (-o device=NAME) as a whole: its capacity, used and "
            + "available space and purgeable bytes, its policy, then every container mounted on it, biggest first, "
            + "with its size on disk, its purgeable bytes and its cache quota (* when derived from its recent use)."))

        \(TextLayout.paragraph(
            "With --html FILE, FILE gets the same figures as one self-contained page (no network; it opens from "
            + "disk in any browser): the device's bar by category (apps' data, caches, cloud-evictable, other, "
            + "free, and what clones saved), the apps by size with their initials as icons, and each app's "
            + "breakdown with its purgeable part; light or dark as the browser is set. Nothing else is printed."))

        Flags:
        \(flags.rows)

        JSON fields (sizes in bytes):
        \(TextLayout.row("path, mountpoint", "the directory shown, and the mount it is on"))
        \(TextLayout.row("app", "the app's bytes (bundle=), null without bundle="))
        \(TextLayout.row("documents", "logical size of Documents"))
        \(TextLayout.row("caches", "logical size of the purgeable zones present"))
        \(TextLayout.row("caches_purgeable", "what purging them could free"))
        \(TextLayout.row("zones", "each zone present: path (in the container), size, purgeable"))
        \(TextLayout.row("other_data", "size - documents - caches - app"))
        \(TextLayout.row("size, files", "the directory's logical size and number of regular files"))
        \(TextLayout.row("allocated", "bytes stored on disk, clone-shared data counted once"))
        \(TextLayout.row("purgeable", "what purging could free in the directory"))
        \(TextLayout.row("clone_savings", "bytes not stored thanks to clones"))
        \(TextLayout.row("cloud_evictable", paragraphs: [
            "allocated bytes in Documents that evicting could drop now (user.purgefs.evictable = 1; 0 without "
            + "cloud=; a walk of at most \(UsageReport.evictableWalkLimit) files)"]))
        \(TextLayout.row("not_flat", paragraphs: [
            "files of the whole mount that share data through purgefs (the root's user.purgefs.not_flat; the "
            + "table shows a Not flat row when there are any, and purgefs flatten makes them plain)"]))
        \(TextLayout.row("excluded_from_backup", "the directory's user.purgefs.excluded_from_backup (true/false; null when not answered)"))
        \(TextLayout.row("device", paragraphs: [
            "capacity, external, container_used (the container's bytes on disk), device_used (everything in use "
            + "on the device, external included: df's Used), available, available_important (available + purgeable), "
            + "available_opportunistic (available - low mark), purgeable (the whole container's), purged_bytes, "
            + "purged_files: the same figures as purgefs space --json"]))
        \(TextLayout.row("with --device", paragraphs: [
            "device, policy, simulated, capacity, external, used, available, purgeable, and containers: each "
            + "with container, mountpoint, pid, size (bytes on disk), logical_size, purgeable, quota, quota_given, "
            + "last_use (nanoseconds since the epoch, 0 if never)"]))
        """

    static let flags = FlagTable<Self>(name, [
        .value("--device", "NAME", \.device, "show the shared device NAME instead of one mount"),
        .switch("--json", \.json, "print every figure in bytes, as one JSON object (fields below)"),
        .value("--html", "FILE", \.html, "write the Settings > Storage page to FILE instead"),
    ])

    var pathArgument = ""
    /// `--device NAME`: the shared device instead of a path.
    var device: String?
    var json = false
    /// `--html FILE`: the page instead of the text.
    var html: String?
    var access = AttributeAccess.live
    private(set) var location: MountLocation?

    init(parsing arguments: [String]) throws(CommandExit) {
        let parsed = try Self.flags.read(arguments, help: Self.help, into: &self)
        if html != nil && json { throw .usage("usage: give --json or --html FILE, not both") }
        if device != nil {
            guard parsed.paths.isEmpty else { throw .usage("usage: give a PATH or --device NAME, not both") }
            return
        }
        pathArgument = try parsed.onePath("PATH", command: Self.name)
    }

    mutating func validate() throws(CommandExit) {
        if device != nil { return }
        let location = try MountLocation.find(pathArgument)
        guard location.mount != nil else {
            throw .failure("\(location.path) is not on a purgefs mount (usage reads the figures a mount answers)")
        }
        self.location = location
    }

    func run(_ context: CommandContext) throws(CommandExit) {
        if let device {
            let report = try DeviceUsageReport.read(device)
            if let html {
                try Self.write(StoragePage(report, members: UsageReport.memberReports(report, access)).page, to: html)
                return
            }
            print(json ? report.json.pretty : report.text)
            return
        }
        guard let location else { preconditionFailure("run() before validate()") }
        let report = try UsageReport.read(at: location, access)
        if let html {
            try Self.write(StoragePage(report).page, to: html)
            return
        }
        print(json ? report.json.pretty : report.text)
    }

    static func write(_ page: HTMLPage, to path: String) throws(CommandExit) {
        do throws(Errno) {
            try page.write(to: path)
        } catch {
            throw .failure("usage: cannot write \(path): \(error)")
        }
    }
}
