import Glibc
import PurgeCommand

// Everything happens in PurgeCommand, where it can be tested.
exit(Purgefs.main(CommandLine.arguments))
