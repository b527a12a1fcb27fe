package landlock

// Seccomp selects the optional parts of the seccomp filter that the
// confined thread installs (see ConfineThread).
type Seccomp struct {
	// DenyKeyrings refuses add_key, request_key and keyctl with EPERM.
	DenyKeyrings bool `json:"deny_keyrings"`
	// DenyUnixSockets refuses socket(AF_UNIX, ...) with EPERM.
	DenyUnixSockets bool `json:"deny_unix_sockets"`
}
