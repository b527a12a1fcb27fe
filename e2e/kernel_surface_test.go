package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/scope"
)

// TestNestedUsernsOptIn (issue 24 item 1): the built-in engine refuses new
// user namespaces (the escape suites' userns-nested rows), and an agent
// that must run containers or bubblewrap inside gets them back with
// agent.toml nested_userns = true or --allow-userns, with a warning each
// run. Control: unsandboxed, unshare -U works here.
func TestNestedUsernsOptIn(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "unshare")
	if out, err := exec.Command("unshare", "-U", "true").CombinedOutput(); err != nil {
		t.Skipf("control: unshare -U fails even unsandboxed here (%v: %s), so the opt-in proves nothing", err, out)
	}
	r := newBrokerRun(t)
	probe := `unshare -U true && echo USERNS-CREATED`
	code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", probe)
	if code == 0 || strings.Contains(out, "USERNS-CREATED") {
		t.Errorf("by default a nested user namespace was created (exit %d): %s", code, out)
	}
	code, out = r.run(60*time.Second, nil, "--allow-userns", "run", "--", "sh", "-c", probe)
	if code != 0 || !strings.Contains(out, "USERNS-CREATED") || !strings.Contains(out, "nested user namespaces are allowed (--allow-userns)") {
		t.Errorf("--allow-userns: want the namespace and a warning (exit %d): %s", code, out)
	}
	folder := filepath.Join(filepath.Dir(r.home), "agents", "containers")
	write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nnested_userns = true\n")
	code, out = r.run(60*time.Second, nil, folder, "-c", probe)
	if code != 0 || !strings.Contains(out, "USERNS-CREATED") || !strings.Contains(out, filepath.Join(folder, "agent.toml")+": nested_userns") {
		t.Errorf("nested_userns = true: want the namespace and a warning naming the file (exit %d): %s", code, out)
	}
	code, out = r.run(60*time.Second, nil, "--dry-run", folder)
	if code != 0 || !strings.Contains(out, "nested user namespaces ALLOWED") {
		t.Errorf("--dry-run does not say nested user namespaces are allowed (exit %d): %s", code, out)
	}
}

// TestTmpSize (issue 24 item 3, issue 38 item 7): the private /tmp,
// /var/tmp and /dev/shm are one tmpfs, bounded (agent.toml tmp_size; by
// default a quarter of the memory for the three together, which --dry-run
// says), so that an agent cannot fill the machine's memory through them. Neighbour: writing under the bound works. Control:
// the same write outside the sandbox works.
func TestTmpSize(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "small")
	write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\ntmp_size = \"16M\"\n")
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		big := `dd if=/dev/zero of=` + dir + `/big bs=1M count=32 2>&1 && echo WROTE-32M`
		code, out := r.run(60*time.Second, nil, folder, "-c", big)
		if code == 0 || strings.Contains(out, "WROTE-32M") {
			t.Errorf("%s: 32M written past tmp_size = 16M (exit %d): %s", dir, code, out)
		}
		small := `dd if=/dev/zero of=` + dir + `/small bs=1M count=8 2>&1 && echo WROTE-8M`
		if code, out := r.run(60*time.Second, nil, folder, "-c", small); code != 0 || !strings.Contains(out, "WROTE-8M") {
			t.Errorf("%s: 8M under tmp_size = 16M failed (exit %d): %s", dir, code, out)
		}
	}
	// Issue 38 item 7: the three are one tmpfs, so tmp_size bounds what
	// they hold together (three of their own took three times as much
	// where no memory scope bounds the run); what /var/tmp holds is the
	// run's own, never the host's.
	marker := fmt.Sprintf("agent-sandbox-var-tmp-%d", time.Now().UnixNano())
	together := `for d in /tmp /var/tmp /dev/shm; do dd if=/dev/zero of=$d/part bs=1M count=6 2>/dev/null && echo WROTE-$d; done; echo x > /var/tmp/` + marker + `; true`
	if code, out := r.run(60*time.Second, nil, folder, "-c", together); code != 0 || !strings.Contains(out, "WROTE-/tmp") || !strings.Contains(out, "WROTE-/var/tmp") || strings.Contains(out, "WROTE-/dev/shm") {
		t.Errorf("6M in each of /tmp, /var/tmp and /dev/shm under tmp_size = 16M: want the first two written and the third refused (exit %d): %s", code, out)
	}
	if _, err := os.Lstat(filepath.Join("/var/tmp", marker)); err == nil {
		os.Remove(filepath.Join("/var/tmp", marker))
		t.Errorf("the agent wrote to the host's /var/tmp")
	}
	code, out := r.run(60*time.Second, nil, "--dry-run", r.folder())
	if code != 0 || !strings.Contains(out, "private /tmp, /var/tmp and /dev/shm: one tmpfs, up to ") || !strings.Contains(out, "a quarter of this machine's memory") {
		t.Errorf("--dry-run does not say the default bound (exit %d): %s", code, out)
	}
	write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\ntmp_size = \"lots\"\n")
	if code, out := r.run(60*time.Second, nil, folder, "-c", "true"); code != 125 || !strings.Contains(out, "tmp_size") || !strings.Contains(out, `"lots"`) {
		t.Errorf("a bad tmp_size did not refuse the run naming the key and value (exit %d): %s", code, out)
	}
}

// TestViewNodev (issue 24 item 3): every bind outside /dev is nodev, so a
// device node in a granted tree (here /dev/null's, made by root with
// mknod in the workdir) cannot be opened inside; /dev's own nodes still
// work. It needs root (mknod): an ordinary user cannot make the node.
func TestViewNodev(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	node := filepath.Join(r.work, "nulldev")
	if out, err := exec.Command("mknod", node, "c", "1", "3").CombinedOutput(); err != nil {
		t.Skipf("mknod needs root (%v: %s): the case runs in the root suite", err, out)
	}
	probe := `echo x > ` + node + ` && echo OPENED-DEVICE`
	if code, out := r.run(60*time.Second, nil, "--no-sandbox", "run", "--", "sh", "-c", probe); code != 0 || !strings.Contains(out, "OPENED-DEVICE") {
		t.Fatalf("control: the device node does not open unsandboxed (exit %d): %s", code, out)
	}
	if code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", probe); code == 0 || strings.Contains(out, "OPENED-DEVICE") {
		t.Errorf("a device node in the workdir opened inside the sandbox (exit %d): %s", code, out)
	}
	if code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", `echo x > /dev/null && head -c1 /dev/zero >/dev/null && echo DEV-OK`); code != 0 || !strings.Contains(out, "DEV-OK") {
		t.Errorf("neighbour: /dev's own nodes fail inside (exit %d): %s", code, out)
	}
}

// TestRootCallerEtc (issue 24 item 4): a root caller's agent is uid 0
// inside the view (without capabilities), so it would read every file of
// /etc that only root may read (/etc/mysql/debian.cnf, Kubernetes'
// admin.conf, a certificate's private key) that the mask list does not
// name: for a root caller each of them is hidden. The test makes one
// (mode 0600, a canary) and removes it. Neighbour: /etc/passwd. Control:
// unsandboxed root reads it. It needs root (to write /etc).
func TestRootCallerEtc(t *testing.T) {
	skipWithoutLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("the case is a root caller's: the root suite runs it")
	}
	secret := filepath.Join("/etc", "agent-sandbox-e2e-"+strconv.Itoa(os.Getpid())+".cnf")
	if err := os.WriteFile(secret, []byte("[client]\npassword = ROOT-ONLY-CANARY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	r := newBrokerRun(t)
	probe := `cat ` + secret
	if code, out := r.run(60*time.Second, nil, "--no-sandbox", "run", "--", "sh", "-c", probe); code != 0 || !strings.Contains(out, "ROOT-ONLY-CANARY") {
		t.Fatalf("control: root does not read it unsandboxed (exit %d): %s", code, out)
	}
	if code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", probe); strings.Contains(out, "ROOT-ONLY-CANARY") {
		t.Errorf("a root-only file of /etc was read inside (exit %d): %s", code, out)
	}
	if code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", `grep -q ^root: /etc/passwd && echo PASSWD-OK`); code != 0 || !strings.Contains(out, "PASSWD-OK") {
		t.Errorf("neighbour: /etc/passwd unreadable inside (exit %d): %s", code, out)
	}
}

// TestMemoryBound (issue 24 item 3): a run of the built-in engine is
// bounded as a whole through a systemd user scope where the caller's user
// manager can do it (internal/scope), and a bound agent.toml sets is never
// dropped. Where no such manager answers (the CI machines: cgroup v1 in a
// hybrid layout, no systemd), a folder's memory_max refuses the run (exit
// 125, the agent not started) and a run without one goes on unbounded,
// with --dry-run saying why. Where one answers, a run is in its own scope,
// an allocation past memory_max is killed (exit 137), one under it works
// (neighbour), and the same allocation outside the sandbox works (control);
// the NixOS VM test vm-scope runs that part under nix flake check.
func TestMemoryBound(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	r := newBrokerRun(t)
	agents := filepath.Join(filepath.Dir(r.home), "agents")
	folder := filepath.Join(agents, "bounded")
	write(t, filepath.Join(folder, "agent.toml"), "command = \"python3\"\nmemory_max = \"64M\"\n")
	alloc := func(mib int) string {
		return fmt.Sprintf("b = bytes([120]) * (%d << 20); print('ALLOCATED-%d')", mib, mib)
	}
	_, noManager := scope.Find()

	t.Run("without a user manager", func(t *testing.T) {
		if noManager == nil {
			t.Skip("this host's user manager can bound a run: the refusal cannot happen here")
		}
		marker := filepath.Join(r.work, "started")
		code, out := r.run(60*time.Second, nil, folder, "-c", "open('"+marker+"', 'w')")
		if code != 125 || !strings.Contains(out, filepath.Join(folder, "agent.toml")+`: memory_max = "64M" cannot be applied: `+noManager.Error()) {
			t.Errorf("memory_max where no user manager can apply it: want 125 naming the file, key and reason (exit %d): %s", code, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the agent started although its memory_max could not be applied")
		}
		code, out = r.run(60*time.Second, nil, "--dry-run", r.folder())
		if code != 0 || !strings.Contains(out, "; no memory bound: "+noManager.Error()) {
			t.Errorf("--dry-run does not say why no memory bound applies (exit %d): %s", code, out)
		}
		if code, out := r.run(60*time.Second, nil, "run", "--", "true"); code != 0 {
			t.Errorf("a run without memory_max did not go on unbounded (exit %d): %s", code, out)
		}
	})

	t.Run("killed past the bound", func(t *testing.T) {
		if noManager != nil {
			t.Skipf("needs a systemd user manager with the memory controller: %v (the NixOS VM test vm-scope runs this under nix flake check)", noManager)
		}
		if out, err := exec.Command("python3", "-c", alloc(256)).CombinedOutput(); err != nil || !strings.Contains(string(out), "ALLOCATED-256") {
			t.Fatalf("control: 256 MiB cannot be allocated unsandboxed here (%v): %s", err, out)
		}
		code, out := r.run(60*time.Second, nil, folder, "-c", alloc(256))
		if code != 137 || strings.Contains(out, "ALLOCATED-256") {
			t.Errorf("256 MiB under memory_max = 64M: want the allocation killed, exit 137 (exit %d): %s", code, out)
		}
		if code, out := r.run(60*time.Second, nil, folder, "-c", alloc(16)); code != 0 || !strings.Contains(out, "ALLOCATED-16") {
			t.Errorf("16 MiB under memory_max = 64M failed (exit %d): %s", code, out)
		}
		code, out = r.run(60*time.Second, nil, "run", "--", "cat", "/proc/self/cgroup")
		if code != 0 || !strings.Contains(out, "/agent-sandbox-sh-") || !strings.Contains(out, ".scope") {
			t.Errorf("the agent is not in the run's scope (exit %d): %s", code, out)
		}
	})
}

// TestOpenNetworkUnixPaths (issue 38 item 7) pins what the README says an
// open network shares: in the host's network namespace /proc/net/unix
// lists the host's Unix socket paths (a socket this test listens on, in a
// directory the agent is not granted), which the agent cannot connect to;
// with a network namespace of its own (offline) the agent sees none of
// them. The kernel shows /proc/net per network namespace, and the view's
// proc cannot hide it per process.
func TestOpenNetworkUnixPaths(t *testing.T) {
	skipWithoutLandlock(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, fmt.Sprintf("host-secret-%d.sock", time.Now().UnixNano()))
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := newBrokerRun(t)
	probe := `grep -c ` + filepath.Base(sock) + ` /proc/net/unix | sed 's/^/LISTED=/'; (exec 3<>` + sock + `) 2>/dev/null && echo CONNECTED; true`
	for _, tc := range []struct {
		flags  []string
		listed string
	}{{[]string{"--network", "open"}, "LISTED=1"}, {[]string{"--offline"}, "LISTED=0"}} {
		_, out := r.run(60*time.Second, nil, append(tc.flags, "run", "--", "sh", "-c", probe)...)
		if !strings.Contains(out, tc.listed) || strings.Contains(out, "CONNECTED") {
			t.Errorf("%s: want %s and no connection:\n%s", tc.flags, tc.listed, out)
		}
	}
}
