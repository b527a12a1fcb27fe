package landlock

// Seccomp selects the optional parts of the seccomp filter that the
// confined thread installs (see ConfineThread).
type Seccomp struct {
	// DenyKeyrings refuses add_key, request_key and keyctl with EPERM.
	DenyKeyrings bool `json:"deny_keyrings"`
	// DenyUnixSockets refuses socket(AF_UNIX, ...) with EPERM.
	DenyUnixSockets bool `json:"deny_unix_sockets"`
	// DenyUserns refuses new user namespaces: clone and unshare with
	// CLONE_NEWUSER (EPERM), and clone3 (ENOSYS, whose flags a filter
	// cannot read: glibc then falls back to clone). Inside a user
	// namespace of its own a process holds every capability there, which
	// opens kernel code (nf_tables and other CAP_NET_ADMIN paths) behind
	// many local privilege escalations.
	DenyUserns bool `json:"deny_userns"`
	// DenyHostIPC refuses what reaches the host's IPC where the agent
	// has no IPC namespace (the weaker sandbox): System V shared memory,
	// semaphores and message queues (EPERM), and Unix socketpairs other
	// than SOCK_STREAM and SOCK_SEQPACKET (SOCK_DGRAM, and SOCK_RAW, which
	// the kernel makes a datagram socket), whose sendto with an address
	// reaches any host datagram socket by path (journald's) where
	// Landlock cannot mediate it (before ABI 9).
	DenyHostIPC bool `json:"deny_host_ipc"`
	// NotifyConnect sends every connect(2) to a user-space listener
	// (seccomp's user notification) before it proceeds unchanged: the
	// namespace view's init records the attempts that lead nowhere (a
	// loopback port nothing is forwarded to, an address past the
	// broker), which the network namespace would refuse without a word.
	// ConfineThread returns the listener.
	NotifyConnect bool `json:"notify_connect"`

	// denyPathTruncate refuses truncate(2), which names a path, with
	// EPERM. It is set from the Landlock ABI in force, never by a caller:
	// before ABI 3 Landlock does not mediate truncating by path, so
	// without it the agent could empty any file its user owns (outside
	// the view's mounts: in the weaker sandbox every one of them).
	// ftruncate(2) stays: it needs a descriptor open for writing, which
	// Landlock mediates on every ABI.
	denyPathTruncate bool
	// emulateMetadata sends the system calls that change a file's
	// metadata (chmod, chown, utimes and extended attributes, by path
	// and by descriptor), which Landlock does not govern, to a listener
	// that the starting process serves; setxattrat, removexattrat and
	// file_setattr fail with ENOSYS. Only [StartProtected] sets it.
	emulateMetadata bool
}
