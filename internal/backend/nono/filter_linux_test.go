//go:build linux

package nono

import (
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TestFilter: the seccomp layer under nono keeps socket(AF_UNIX) only for
// a folder's unix_socket_dir_bind directories (nono's pathname mediation
// then guards them) and new user namespaces only for the opt-in; the rest
// is always refused.
func TestFilter(t *testing.T) {
	all := landlock.Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyUserns: true, DenyHostIPC: true}
	for _, tc := range []struct {
		name    string
		sockets []string
		userns  bool
		want    landlock.Seccomp
	}{
		{"default", nil, false, all},
		{"unix_socket_dir_bind", []string{"/home/u/.agent-browser"}, false, landlock.Seccomp{DenyKeyrings: true, DenyUserns: true, DenyHostIPC: true}},
		{"nested_userns", nil, true, landlock.Seccomp{DenyKeyrings: true, DenyUnixSockets: true, DenyHostIPC: true}},
	} {
		var p Prepared
		p.Profile.Filesystem.UnixSocketDirBind = tc.sockets
		if got := Filter(p, spec.Spec{NestedUserns: tc.userns}); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
