package landlock

// The Landlock ABI versions at which the capabilities agent-sandbox uses
// appeared, following the kernel's Landlock documentation. This is the one
// table: the ruleset builder, the enforcement plan, the landlock backend's
// warnings and doctor all read it.
const (
	// ABIFilesystem: filesystem rules (Linux 5.13).
	ABIFilesystem = 1
	// ABIRefer: LANDLOCK_ACCESS_FS_REFER, linking and renaming across
	// directories.
	ABIRefer = 2
	// ABITruncate: LANDLOCK_ACCESS_FS_TRUNCATE.
	ABITruncate = 3
	// ABITCP: LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP.
	ABITCP = 4
	// ABIIoctlDev: LANDLOCK_ACCESS_FS_IOCTL_DEV.
	ABIIoctlDev = 5
	// ABIScope: LANDLOCK_SCOPE_{ABSTRACT_UNIX_SOCKET,SIGNAL} (Linux 6.12).
	ABIScope = 6
	// ABIResolveUnix: LANDLOCK_ACCESS_FS_RESOLVE_UNIX, connecting to Unix
	// sockets by path.
	ABIResolveUnix = 9
	// ABIUDP: LANDLOCK_ACCESS_NET_{BIND_UDP,CONNECT_SEND_UDP}.
	ABIUDP = 10

	// MaxKnownABI is the newest ABI this package knows. On a newer kernel
	// the ruleset is built for this one: rights added later are not
	// handled (and so not restricted).
	MaxKnownABI = 11
)

// Feature is one capability of the table above, as a person reads it.
type Feature struct {
	// ABI is the version that brought it.
	ABI int
	// What it gives, in a few words.
	What string
}

// Features lists the table's capabilities, oldest first.
var Features = []Feature{
	{ABIFilesystem, "filesystem rules"},
	{ABIRefer, "linking and renaming across directories"},
	{ABITruncate, "truncate"},
	{ABITCP, "TCP bind/connect rules (a blocked network without a network namespace)"},
	{ABIIoctlDev, "ioctl on device files"},
	{ABIScope, "abstract Unix socket and signal scoping"},
	{ABIResolveUnix, "connecting to Unix sockets by path"},
	{ABIUDP, "UDP rules"},
}
