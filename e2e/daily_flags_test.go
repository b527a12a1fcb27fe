package e2e

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Daily use, issue 12 items 6-12: the per-run flags, `run -- CMD`, `why`,
// the hint after a failed run, each against the real program in the
// built-in engine.

// exec runs agent-sandbox with args in the workdir, stdout and stderr
// together.
func (d *daily) exec(args ...string) (string, int) {
	d.t.Helper()
	cmd := exec.Command(d.bin, args...)
	cmd.Dir = d.work
	cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path, "LANG=C.UTF-8", "SHELL=/bin/sh"})
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatal(err)
	}
	return string(out), code
}

// listen serves "pong" on a host loopback TCP port and returns the port.
func listen(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("pong\n"))
			c.Close()
		}
	}()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func TestDailyFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	ll := []string{"--sandbox-backend", "landlock"}

	t.Run("per-run-read-and-write", func(t *testing.T) {
		d := newDaily(t)
		lib := filepath.Join(filepath.Dir(d.work), "lib")
		out := filepath.Join(filepath.Dir(d.work), "out")
		d.file(filepath.Join(lib, "data.txt"), "LIB-DATA\n", 0o644)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		script := `cat ` + lib + `/data.txt; touch ` + lib + `/x 2>/dev/null && echo LIB-WRITABLE; touch ` + out + `/made && echo OUT-WRITTEN`
		o, _ := d.exec(append(ll, "shell", "-c", script)...)
		if strings.Contains(o, "LIB-DATA") || strings.Contains(o, "OUT-WRITTEN") {
			t.Fatalf("control: without the flags the paths were reachable: %s", o)
		}
		o, code := d.exec(append(ll, "--read", lib, "--write", out, "shell", "-c", script)...)
		if code != 0 || !strings.Contains(o, "LIB-DATA") || !strings.Contains(o, "OUT-WRITTEN") {
			t.Errorf("--read/--write did not grant (exit %d): %s", code, o)
		}
		if strings.Contains(o, "LIB-WRITABLE") {
			t.Errorf("--read granted write: %s", o)
		}
		if _, err := os.Stat(filepath.Join(out, "made")); err != nil {
			t.Errorf("the --write grant did not reach the host: %v", err)
		}
		d.file(".ssh/id_ed25519", "SECRET-SSH\n", 0o600)
		o, code = d.exec(append(ll, "--read", filepath.Join(d.home, ".ssh"), "shell", "-c", "cat ~/.ssh/id_ed25519; touch "+out+"/started")...)
		if code != 125 || strings.Contains(o, "SECRET-SSH") || !strings.Contains(o, "credential path") {
			t.Errorf("--read ~/.ssh: exit %d, want 125 naming the credential path: %s", code, o)
		}
	})

	t.Run("network-open", func(t *testing.T) {
		d := newDaily(t)
		port := listen(t)
		probe := `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && head -1 <&3`
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("needs bash for /dev/tcp")
		}
		if o, _ := d.exec(append(ll, "--no-sandbox", "shell", "-c", "bash -c '"+probe+"'")...); !strings.Contains(o, "pong") {
			t.Fatalf("control: the listener is not reachable unsandboxed: %s", o)
		}
		if o, _ := d.exec(append(ll, "shell", "-c", "bash -c '"+probe+"'")...); strings.Contains(o, "pong") {
			t.Errorf("the offline shell reached the host's loopback: %s", o)
		}
		o, code := d.exec(append(ll, "--network", "open", "shell", "-c", "bash -c '"+probe+"'")...)
		if code != 0 || !strings.Contains(o, "pong") || !strings.Contains(o, "NETWORK OPEN") {
			t.Errorf("--network open: exit %d, want the listener reached and the loud warning: %s", code, o)
		}
		if o, code := d.exec(append(ll, "--network", "open", "--offline", "shell", "-c", "true")...); code != 125 {
			t.Errorf("--network open --offline: exit %d, want 125: %s", code, o)
		}
	})

	t.Run("run-any-command", func(t *testing.T) {
		d := newDaily(t)
		d.file(".ssh/id_ed25519", "SECRET-SSH\n", 0o600)
		port := listen(t)
		script := `echo made > made.txt && cat made.txt && { cat ~/.ssh/id_ed25519 2>/dev/null; touch ~/planted 2>/dev/null; true; }`
		if o, code := d.exec("--no-sandbox", "shell", "-c", script); code != 0 || !strings.Contains(o, "SECRET-SSH") {
			t.Fatalf("control: unsandboxed the script did not read the key (exit %d): %s", code, o)
		}
		os.Remove(filepath.Join(d.home, "planted"))
		o, code := d.exec(append(append([]string{"run"}, ll...), "--", "/bin/sh", "-c", script)...)
		if code != 0 || !strings.Contains(o, "made") {
			t.Errorf("run -- sh: the workdir was not writable (exit %d): %s", code, o)
		}
		if strings.Contains(o, "SECRET-SSH") {
			t.Errorf("run -- sh read ~/.ssh: %s", o)
		}
		if _, err := os.Stat(filepath.Join(d.home, "planted")); err == nil {
			t.Errorf("run -- sh wrote to $HOME")
		}
		if _, err := os.Stat(filepath.Join(d.home, ".local/state/agent-sandbox/agents/run")); err != nil {
			t.Errorf("the state dir of run -- is not agents/run: %v", err)
		}
		if _, err := exec.LookPath("bash"); err == nil {
			probe := "exec 3<>/dev/tcp/127.0.0.1/" + port + " && head -1 <&3"
			if o, _ := d.exec(append(append([]string{"run"}, ll...), "--", "bash", "-c", probe)...); strings.Contains(o, "pong") {
				t.Errorf("run -- is not offline by default: %s", o)
			}
			if o, _ := d.exec(append(append([]string{"run"}, ll...), "--network", "open", "--", "bash", "-c", probe)...); !strings.Contains(o, "pong") {
				t.Errorf("run --network open -- did not reach the listener: %s", o)
			}
		}
	})

	t.Run("why-agrees-with-the-run", func(t *testing.T) {
		d := newDaily(t)
		key := d.file(".ssh/id_ed25519", "SECRET-SSH\n", 0o600)
		in := d.file(filepath.Join(d.work, "in.txt"), "WORK-FILE\n", 0o644)
		other := d.file(filepath.Join(filepath.Dir(d.work), "other", "o.txt"), "OTHER-FILE\n", 0o644)
		rows := []struct {
			why    []string
			script string
			works  func(string) bool
		}{
			{[]string{in}, "cat " + in, func(o string) bool { return strings.Contains(o, "WORK-FILE") }},
			{[]string{"--write", in}, "echo more >> " + in + " && echo WROTE", func(o string) bool { return strings.Contains(o, "WROTE") }},
			{[]string{key}, "cat " + key, func(o string) bool { return strings.Contains(o, "SECRET-SSH") }},
			{[]string{other}, "cat " + other, func(o string) bool { return strings.Contains(o, "OTHER-FILE") }},
			{[]string{"--write", "/etc/hostname"}, "echo x >> /etc/hostname && echo WROTE", func(o string) bool { return strings.Contains(o, "WROTE") }},
			{[]string{"/etc/os-release"}, "cat /etc/os-release", func(o string) bool { return strings.Contains(o, "ID=") }},
			{[]string{"--exec", "/bin/true"}, "/bin/true && echo RAN", func(o string) bool { return strings.Contains(o, "RAN") }},
		}
		for _, r := range rows {
			wo, code := d.exec(append([]string{"why"}, append(r.why, "shell")...)...)
			if code != 0 && code != 1 {
				t.Errorf("why %q: exit %d: %s", r.why, code, wo)
				continue
			}
			ro, _ := d.exec(append(ll, "shell", "-c", r.script+" 2>&1; true")...)
			if allowed, works := code == 0, r.works(ro); allowed != works {
				t.Errorf("why %q says allowed=%v, but in the sandbox it worked=%v\nwhy: %s\nrun: %s", r.why, allowed, works, wo, ro)
			}
		}
		port := listen(t)
		wo, code := d.exec("why", "--host", "127.0.0.1:"+port, "shell")
		if code != 1 || !strings.Contains(wo, "blocked") {
			t.Errorf("why --host on the offline shell: exit %d: %s", code, wo)
		}
	})

	t.Run("failed-run-points-at-why", func(t *testing.T) {
		d := newDaily(t)
		o, code := d.exec(append(ll, "shell", "-c", "exit 3")...)
		if code != 3 || !strings.Contains(o, "agent-sandbox: shell exited 3 inside the sandbox (namespace view)") || !strings.Contains(o, "`agent-sandbox why --sandbox-backend landlock PATH shell`") {
			t.Errorf("a failed sandboxed run (exit %d) does not point at why: %s", code, o)
		}
		if n := strings.Count(o, "agent-sandbox why"); n != 1 {
			t.Errorf("the hint is not one line (%d mentions): %s", n, o)
		}
		o, _ = d.exec(append(append([]string{"run"}, ll...), "--", "/bin/sh", "-c", "exit 4")...)
		if !strings.Contains(o, "run exited 4 inside the sandbox (namespace view); if the sandbox denied it something, `agent-sandbox why --sandbox-backend landlock PATH` ") {
			t.Errorf("run -- does not point at why without an agent: %s", o)
		}
		for _, args := range [][]string{
			append(ll, "shell", "-c", "true"),
			{"--no-sandbox", "shell", "-c", "exit 3"},
			append(ll, "--quiet", "shell", "-c", "exit 3"),
		} {
			if o, _ := d.exec(args...); strings.Contains(o, "agent-sandbox why") {
				t.Errorf("%q printed the hint: %s", args, o)
			}
		}
		// ps works inside (its own /proc, no "mount -t proc" complaint).
		o, code = d.exec(append(ll, "shell", "-c", "ps -e -o pid=,comm=; ps aux >/dev/null && echo PS-OK")...)
		if code != 0 || !strings.Contains(o, "PS-OK") || strings.Contains(o, "mount -t proc") {
			t.Errorf("ps inside the sandbox (exit %d): %s", code, o)
		}
		if strings.Contains(o, "systemd") || strings.Contains(o, "sshd") {
			t.Errorf("ps shows host processes: %s", o)
		}
	})

	t.Run("banner-and-quiet", func(t *testing.T) {
		d := newDaily(t)
		// onTerminal runs agent-sandbox with stderr on a pseudo-terminal
		// and returns what that terminal showed.
		onTerminal := func(term string, args ...string) string {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("cannot open a pseudo-terminal: %v", err)
			}
			defer ptmx.Close()
			var shown bytes.Buffer
			done := make(chan struct{})
			go func() { io.Copy(&shown, ptmx); close(done) }()
			cmd := exec.Command(d.bin, args...)
			cmd.Dir = d.work
			cmd.Env = withCover([]string{"HOME=" + d.home, "PATH=" + d.path, "TERM=" + term, "SHELL=/bin/sh"})
			cmd.Stderr = tty
			if err := cmd.Run(); err != nil {
				if _, ok := err.(*exec.ExitError); !ok {
					t.Fatal(err)
				}
			}
			tty.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			return shown.String()
		}
		run := append(ll, "shell", "-c", "exit 5")
		if o := onTerminal("xterm", run...); !strings.Contains(o, "\U0001F512 Sandbox Active (namespace view)") || !strings.Contains(o, "agent-sandbox why") {
			t.Errorf("on a terminal: no banner or hint: %q", o)
		}
		if o := onTerminal("dumb", run...); !strings.Contains(o, "Sandbox Active (namespace view)") || strings.Contains(o, "\U0001F512") {
			t.Errorf("TERM=dumb: want the banner without the emoji: %q", o)
		}
		if o := onTerminal("xterm", append([]string{"--quiet"}, run...)...); strings.Contains(o, "Sandbox Active") || strings.Contains(o, "agent-sandbox why") {
			t.Errorf("--quiet printed the banner or the hint: %q", o)
		}
		if o := onTerminal("xterm", append([]string{"--quiet", "--read", "$HOME"}, run...)...); !strings.Contains(o, "agent-sandbox: error: --read") {
			t.Errorf("--quiet dropped an error: %q", o)
		}
		if o, _ := d.exec(run...); strings.Contains(o, "Sandbox Active") {
			t.Errorf("a banner on a stderr that is not a terminal: %q", o)
		}
	})

	t.Run("copy-a-built-in-and-edit-it", func(t *testing.T) {
		d := newDaily(t)
		data := d.file(filepath.Join(filepath.Dir(d.work), "notes", "n.txt"), "NOTES\n", 0o644)
		if o, _ := d.exec(append(ll, "shell", "-c", "cat "+data)...); strings.Contains(o, "NOTES") {
			t.Fatalf("control: the built-in shell already reads %s: %s", data, o)
		}
		if o, code := d.exec("agents", "copy", "shell"); code != 0 {
			t.Fatalf("agents copy shell: exit %d: %s", code, o)
		}
		toml := filepath.Join(d.home, ".config/agent-sandbox/agents/shell/agent.toml")
		b, err := os.ReadFile(toml)
		if err != nil {
			t.Fatal(err)
		}
		d.file(toml, string(b)+"read_paths = [\""+filepath.Dir(data)+"\"]\n", 0o644)
		o, code := d.exec(append(ll, "shell", "-c", "cat "+data)...)
		if code != 0 || !strings.Contains(o, "NOTES") {
			t.Errorf("the edited copy does not override the built-in (exit %d): %s", code, o)
		}
	})
}
