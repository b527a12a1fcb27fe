package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVarLockPrivate (issue 39, item 5) is firejail's case
// (netblue30/firejail, test/fs/fs_var_lock.exp: write, read and remove a
// file in /var/lock, twice): the view has a /var/lock of its own, writable
// like /tmp, empty at each start, and what the agent leaves there never
// reaches the host's.
func TestVarLockPrivate(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	name := "agent-sandbox-e2e-" + filepath.Base(filepath.Dir(filepath.Dir(r.work)))
	host := ""
	if d, err := filepath.EvalSymlinks("/var/lock"); err == nil {
		if f, err := os.CreateTemp(d, "agent-sandbox-e2e-host-"); err == nil {
			host = f.Name()
			f.Close()
			defer os.Remove(host)
		}
	}
	script := `echo mytest > /var/lock/` + name + ` && cat /var/lock/` + name + ` && rm /var/lock/` + name + ` && echo removed
cat /var/lock/` + name + ` 2>/dev/null && echo STILL-THERE
echo left > /var/lock/` + name + `.left && echo left-ok`
	if host != "" {
		script += "\nls /var/lock/" + filepath.Base(host) + " 2>/dev/null && echo HOST-LOCK-SEEN"
	}
	for i := 0; i < 2; i++ {
		code, out := r.run(60*time.Second, nil, "--offline", r.folder(), "-c", script+"\nls /var/lock/"+name+".left.prev 2>/dev/null && echo PREVIOUS-RUN-SEEN; mv /var/lock/"+name+".left /var/lock/"+name+".left.prev")
		if code != 0 || !strings.Contains(out, "mytest") || !strings.Contains(out, "removed") || !strings.Contains(out, "left-ok") {
			t.Fatalf("run %d: /var/lock is not writable in the view (exit %d): %s", i+1, code, out)
		}
		for _, bad := range []string{"STILL-THERE", "HOST-LOCK-SEEN", "PREVIOUS-RUN-SEEN"} {
			if strings.Contains(out, bad) {
				t.Errorf("run %d: /var/lock is not the sandbox's own (%s): %s", i+1, bad, out)
			}
		}
	}
	for _, suffix := range []string{".left", ".left.prev"} {
		if _, err := os.Lstat(filepath.Join("/var/lock", name+suffix)); err == nil {
			os.Remove(filepath.Join("/var/lock", name+suffix))
			t.Errorf("the agent's /var/lock file reached the host's /var/lock")
		}
	}
}

// TestNetlinkRoute (issue 39, item 5): the decision to keep NETLINK_ROUTE
// in the view with the network blocked or allow-listed, where codex's
// sandbox (openai/codex, codex-rs/linux-sandbox/src/seccomp.rs: its
// restricted and proxy-routed modes refuse every socket family but
// AF_UNIX, resp. AF_INET and AF_INET6) and nono refuse it. Refused, Node's
// os.networkInterfaces() throws (pinned under nono below), which ends a
// Node program that calls it; kept, the agent sees the loopback of its own
// network namespace and nothing of the host's, and can change nothing
// there (no capability). Every other netlink protocol stays refused.
func TestNetlinkRoute(t *testing.T) {
	skipWithoutLandlock(t)
	for _, tool := range []string{"python3", "node", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (.ci/run installs python3, nodejs and iproute2)", tool)
		}
	}
	script := `python3 -c '
import socket
print("ifs", sorted(n for _, n in socket.if_nameindex()))
for name, proto in (("audit", 9), ("sock_diag", 4), ("uevent", 15), ("generic", 16), ("netfilter", 12), ("xfrm", 6)):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
        print("OPEN", name)
    except PermissionError:
        print("refused", name)
'
node -e 'try { console.log("node-ifs", JSON.stringify(Object.keys(require("os").networkInterfaces()))) } catch (e) { console.log("NODE-THREW", e.message) }'
ip -o link | awk '{print "ip-link", $2}'
ip link add agsbdummy0 type dummy 2>/dev/null && echo ADDED-LINK
true`
	r := newBrokerRun(t)
	for _, mode := range [][]string{{"--offline"}, {"--allow-host", "example.invalid"}} {
		code, out := r.run(60*time.Second, nil, append(mode, r.folder(), "-c", script)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", mode, code, out)
		}
		for _, want := range []string{"ifs ['lo']", `node-ifs ["lo"]`, "ip-link lo:", "refused audit", "refused sock_diag", "refused uevent", "refused generic", "refused netfilter", "refused xfrm"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: want %q: %s", mode, want, out)
			}
		}
		for _, bad := range []string{"OPEN", "NODE-THREW", "ADDED-LINK"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v: %s: %s", mode, bad, out)
			}
		}
	}
	t.Run("nono-refuses-it", func(t *testing.T) {
		nonoOrSkip(t)
		// nono alone (no view: noUserns): inside the view nono's
		// network is left to the view, which keeps NETLINK_ROUTE.
		r.prefix = noUserns(t)
		defer func() { r.prefix = nil }()
		code, out := r.cli(60*time.Second, nil, "--sandbox-backend", "nono", "--offline", r.folder(), "-c", script)
		if code != 0 || !strings.Contains(out, "NODE-THREW") {
			t.Errorf("under nono with the network blocked, Node's os.networkInterfaces() no longer throws (nono's refusal of NETLINK_ROUTE changed: update README's netlink paragraph) (exit %d): %s", code, out)
		}
	})
}
