import Glibc
import PurgeCommand

// Everything happens in PurgeCommand, where it can be tested. buildCommit is
// generated at build by the CommitStamp plugin (Plugins/CommitStamp).
exit(Purgefs.main(CommandLine.arguments, commit: buildCommit))
