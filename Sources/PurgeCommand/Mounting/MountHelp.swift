import PurgeCore
import PurgeEngines

/// `purgefs mount --help`, its option list built from `MountOptionCatalog`'s
/// table so it lists exactly what the parser accepts, and says which options are accepted
/// now but act only once their feature is built.
enum MountHelp {
    static var text: String {
        var sections: [String] = []
        sections.append("""
            Usage: purgefs mount CONTAINER [MOUNTPOINT] [-f] [-o OPT[,OPT...]]
                   purgefs CONTAINER MOUNTPOINT [-o OPT[,OPT...]]   (the mount.fuse3 and fstab form)
            """)
        sections.append(TextLayout.paragraph(
            "Mounts the directory CONTAINER at MOUNTPOINT, or over itself when MOUNTPOINT is left out "
            + "(in place: the app keeps its paths). Without -f, purgefs starts a daemon and returns once the "
            + "mount is usable, or exits 1 with the reason it could not mount."))
        sections.append(TextLayout.paragraph(
            "One daemon per container: a container already mounted (in place or elsewhere), another container "
            + "given the same state=, and a container inside a mounted one (or holding one) are refused before "
            + "anything is mounted, naming the mount that has it and its daemon's pid. The daemon holds a lock "
            + "on STATE/daemon.lock for as long as it lives."))
        sections.append("Arguments:\n" + [
            TextLayout.row("CONTAINER", "the app container: the directory that holds the data"),
            TextLayout.row("MOUNTPOINT", "where to mount it (default: CONTAINER itself)"),
        ].joined(separator: "\n"))
        sections.append("Flags:\n" + MountCommand.flags.rows)
        sections.append("purgefs options:\n" + MountOptionCatalog.purgefsOptions.map(row).joined(separator: "\n"))
        sections.append("""
            Values:
            \(TextLayout.row("SIZE", "bytes, or a number with K, M, G or T (powers of 1024); a trailing B or iB is allowed (1GB = 1GiB = 1G), and a decimal part with a unit (1.5G)"))
            \(TextLayout.row("N%", "a share of the capacity, more than 0 and at most 100 (12.5% is fine)"))
            \(TextLayout.row("DURATION", "seconds, or a number with s, m, h or d (30s, 15m, 1.5h)"))
            \(TextLayout.row("P1:P2", "paths relative to the container, without '..'; ./a//b/ means a/b"))
            """)
        sections.append("FUSE and mount options, passed to libfuse 3.14:\n" + TextLayout.indented(
            MountOptionCatalog.passThroughFlags.joined(separator: " ")
                + " " + MountOptionCatalog.passThroughValueOptions.map { $0 + "=..." }.joined(separator: " ")
                + " (subtype only as subtype=purgefs: purgefs unmount finds mounts by the type fuse.purgefs)"))
        sections.append("Accepted and ignored (fstab and mount bookkeeping):\n" + TextLayout.indented(
            (MountOptionCatalog.ignoredWords + MountOptionCatalog.ignoredPrefixes.map { $0 + "*" }).joined(separator: " ")
                + " (relatime is the kernel's default for a new mount)"))
        sections.append("Any other option is an error.")
        sections.append(TextLayout.paragraph(
            "As a daemon, purgefs writes its messages to STATE/daemon.log once the mount is ready, "
            + "where STATE is the state directory (created if missing); purgefs log MOUNTPOINT --daemon "
            + "prints it."))
        sections.append("""
            fstab:
              /srv/app  /srv/app-view  fuse.purgefs  capacity=1G  0 0
            """)
        return sections.joined(separator: "\n\n")
    }

    private static func row(_ entry: MountOptionCatalog.Entry) -> String {
        TextLayout.row(entry.term, paragraphs: [entry.summary, "Default: \(entry.defaultText)."], column: 28)
    }
}
