//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hijackScript is an agent's attack on the commands exec starts beside
// it: it waits for one (a `sleep`), opens its standard input again
// through /proc/PID/fd/0 for appending and writes to it, and records
// what happened in hijack.out.
const hijackScript = `#!/bin/sh
i=0
while [ $i -lt 200 ]; do
  for p in /proc/[0-9]*; do
    case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in "sleep 1 "|"sleep 2 ") ;; *) continue ;; esac
    if printf 'HIJACKED-BY-AGENT\n' >> $p/fd/0 2>/dev/null; then echo "wrote $p/fd/0" > hijack.out; else echo refused > hijack.out; fi
    exit 0
  done
  sleep 0.05; i=$((i+1))
done
echo none > hijack.out
`

// TestSessionAttackNoLandlockStdio: an exec'd command runs as the agent's
// uid and is dumpable; with Landlock, the two are in Landlock domains of
// their own and the agent cannot open the command's descriptors through
// /proc. On a kernel without Landlock (simulated: its system calls fail
// with ENOSYS) nothing else stood between them: the agent opened the
// command's standard input, a host file the user gave it read-only
// (`exec ID -- CMD < ~/file`), again for writing and wrote to the host
// file. There, exec now refuses a caller's file or terminal as a
// standard stream (naming the way out: a pipe, </dev/null, -t), and takes
// pipes; with Landlock a file is still passed and the agent's reopen is
// refused.
func TestSessionAttackNoLandlockStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := buildAgentSandbox(t)
	for _, tc := range []struct {
		name     string
		prefix   []string
		landlock bool
	}{
		{"without-landlock", []string{self}, false},
		{"with-landlock", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := homeTempDir(t, "session-attack-stdio-")
			work := filepath.Join(home, "project")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, "hijack.sh"), []byte(hijackScript), 0o755); err != nil {
				t.Fatal(err)
			}
			// agent.sh: the attack in the background, then the session
			// test's agent (sh -c sessionScript: ready, read).
			if err := os.WriteFile(filepath.Join(work, "agent.sh"), []byte("./hijack.sh &\nexec sh \"$@\"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			hostFile := filepath.Join(home, "host-input")
			const content = "the user's own file, given read-only\n"
			if err := os.WriteFile(hostFile, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var extra []string
			if !tc.landlock {
				extra = []string{noLandlockExecVar + "=1"}
			}
			env := sessionEnv(home, extra...)
			s := startSessionOf(t, bin, tc.prefix, env, work, "--sandbox-backend", "landlock", "run", "--", "/bin/sh", "./agent.sh")
			if !tc.landlock && !strings.Contains(s.out.String(), "runs without Landlock") {
				t.Fatalf("control: the session does not say it runs without Landlock: %s", s.out)
			}
			in, err := os.Open(hostFile)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			cmd := exec.Command(bin, "exec", "-T", s.id, "--", "sleep", "2")
			cmd.Env, cmd.Dir, cmd.Stdin = env, work, in
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.landlock {
				checkReopenRefused(t, work, code, out)
			} else {
				checkHostStreamRefused(t, bin, env, work, s.id, code, out)
			}
			if err := s.end(t); err != nil {
				t.Logf("session's end: %v: %s", err, s.out)
			}
			if b, _ := os.ReadFile(hostFile); string(b) != content {
				t.Errorf("the host file given to exec as read-only stdin was written by the agent: %q", b)
			}
		})
	}
}

// checkReopenRefused: with Landlock, exec took the file as stdin and the
// agent's reopen of it was refused.
func checkReopenRefused(t *testing.T, work string, code int, out []byte) {
	t.Helper()
	if code != 0 {
		t.Fatalf("with Landlock, exec with a file as stdin: exit %d, want 0: %s", code, out)
	}
	var got []byte
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, _ = os.ReadFile(filepath.Join(work, "hijack.out")); len(got) > 0 {
			break
		}
	}
	if strings.TrimSpace(string(got)) != "refused" {
		t.Errorf("with Landlock, the agent's reopen of the exec'd command's stdin: %q, want refused", got)
	}
}

// checkHostStreamRefused: without Landlock, exec refused the file as
// stdin (naming the way out) and takes pipes.
func checkHostStreamRefused(t *testing.T, bin string, env []string, work, id string, code int, out []byte) {
	t.Helper()
	if code != 125 || !strings.Contains(string(out), "without Landlock") || !strings.Contains(string(out), "pipe") {
		t.Errorf("without Landlock, exec with a host file as stdin: exit %d, want 125 naming Landlock and a pipe: %s", code, out)
	}
	pipe := exec.Command(bin, "exec", "-T", id, "--", "cat")
	pipe.Env, pipe.Dir, pipe.Stdin = env, work, strings.NewReader("through a pipe\n")
	if pout, err := pipe.CombinedOutput(); err != nil || !strings.Contains(string(pout), "through a pipe") {
		t.Errorf("without Landlock, exec with pipes: %v: %s", err, pout)
	}
	// The command the agent looks for, fed by a pipe: nothing of the
	// host's to reopen.
	sl := exec.Command(bin, "exec", "-T", id, "--", "sleep", "1")
	sl.Env, sl.Dir, sl.Stdin = env, work, strings.NewReader("")
	if sout, err := sl.CombinedOutput(); err != nil {
		t.Errorf("without Landlock, exec sleep with a pipe: %v: %s", err, sout)
	}
}

// snoopScript is an agent's attack on the terminal exec gives a command
// (exec -t): it waits for a pty slave to appear, in the sandbox's
// /dev/pts or in exec's own instance, opens it, writes to it (what the
// user's terminal would show) and reads from it (what the user types to
// the command), and records each step in snoop.log.
const snoopScript = `#!/bin/sh
i=0
while [ $i -lt 400 ]; do
  for p in /.agent-sandbox-pts/[0-9]* /dev/pts/[0-9]*; do
    [ -e "$p" ] || continue
    if ! ( : <>"$p" ) 2>/dev/null; then echo "refused $p" >> snoop.log; exit 0; fi
    exec 3<>"$p"
    echo "opened $p" >> snoop.log
    printf 'AGENT-INJECTED\n' >&3
    echo "read $(timeout 10 dd bs=1 count=6 <&3 2>/dev/null)" >> snoop.log
    exit 0
  done
  sleep 0.05; i=$((i+1))
done
echo "no pty" >> snoop.log
`

// TestSessionAttackPtySnoop: the terminal exec gives a command (exec -t,
// a pty of the sandbox's) was a /dev/pts/N of the agent's own devpts
// instance, which the agent, the same uid with /dev/pts granted, opened:
// it read what the user typed to the command (a passphrase typed to ssh
// there) and wrote to the user's terminal. exec's terminals now come from
// an instance of their own (/.agent-sandbox-pts) that only the commands
// exec starts may open: the agent's open is refused, the command's own
// terminal works (tty, input, /dev/tty and its name).
func TestSessionAttackPtySnoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-attack-pty-")
	if err := os.WriteFile(filepath.Join(work, "snoop.sh"), []byte(snoopScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "agent.sh"), []byte("./snoop.sh &\nexec sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := sessionEnv(home)
	s := startSessionOf(t, bin, nil, env, work, "run", "--", "/bin/sh", "./agent.sh")
	r := startAtTTY(t, bin, env, work, 24, 80, "exec", s.id, "--", "sh", "-c",
		`tty; echo ready-for-input; read x; echo "got=$x"; echo via-dev-tty > /dev/tty; echo via-name > "$(tty)"`)
	r.waitFor(t, "ready-for-input")
	logPath := filepath.Join(work, "snoop.log")
	var log string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) { // the agent's attempt: no event to await
		b, _ := os.ReadFile(logPath)
		if log = string(b); strings.Contains(log, "opened") || strings.Contains(log, "refused") || strings.Contains(log, "no pty") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's attack never found the terminal: %q", log)
		}
	}
	if _, err := r.master.Write([]byte("typed-secret\r")); err != nil {
		t.Fatal(err)
	}
	code, out := r.wait(t)
	if code != 0 || !strings.Contains(out, "got=typed-secret") || !strings.Contains(out, "via-dev-tty") || !strings.Contains(out, "via-name") {
		t.Errorf("exec's command did not get its terminal's input whole, or could not open its terminal by /dev/tty or by name: exit %d: %q", code, out)
	}
	if !regexp.MustCompile(`(?m)^/\.agent-sandbox-pts/[0-9]+$`).MatchString(out) {
		t.Errorf("exec's command's terminal is not one of exec's own instance (/.agent-sandbox-pts/N): %q", out)
	}
	if strings.Contains(out, "AGENT-INJECTED") {
		t.Errorf("the agent wrote to the user's terminal through the command's pty: %q", out)
	}
	if err := s.end(t); err != nil {
		t.Logf("session's end: %v: %s", err, s.out)
	}
	b, _ := os.ReadFile(logPath)
	if log = string(b); strings.Contains(log, "opened") || !strings.Contains(log, "refused /.agent-sandbox-pts/") {
		t.Errorf("the agent opened the pty of the command exec started (or did not find it): %q", log)
	}
}
