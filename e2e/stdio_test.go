package e2e

// The standard streams the caller hands the agent (issue 39, item 3):
// a program that opens /dev/stdin, /dev/stdout, /dev/stderr or /dev/fd/N
// opens the stream's file again, and that must work when the caller
// redirected it to a file no grant reaches (`2>~/build.log`), with no more
// than the descriptor's own access: a write-only stderr must not let the
// agent read the file, a read-only stdin must not let it write.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runStdio runs `agent-sandbox FLAGS shell -c SCRIPT` (or --no-sandbox)
// with stdin and stderr the given files; it returns the exit status and
// what the run wrote to stdout (a pipe).
func (w *world) runStdio(sandboxed bool, script string, stdin, stderr *os.File) (int, string) {
	w.t.Helper()
	args := append([]string{}, w.flags...)
	if !sandboxed {
		args = []string{"--no-sandbox"}
	}
	args = append(args, "-q", "shell", "-c", script)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, w.wrap...), w.bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = w.work
	cmd.Env = append(w.env(), w.extraEnv...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running agent-sandbox: %v", err)
	}
	return code, out.String()
}

// TestStdioReopen is bubblewrap's case (containers/bubblewrap,
// tests/test-run.sh, "Test devices": /dev/stdin, /dev/stdout and
// /dev/stderr exist in the sandbox and the run's output goes to a file the
// test redirected it to), for a stream redirected to a file outside every
// grant, on the view, the weaker sandbox and nono. Each engine runs the
// script unsandboxed first (control: there a write-only stderr can be
// read back through /dev/stderr, so the sandbox's refusal means
// something). The reads use dd with O_NONBLOCK: under nono the streams
// are pipes, and a read of the agent's own stderr pipe must not wait.
func TestStdioReopen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	engines := []struct {
		name  string
		setup func(t *testing.T, w *world)
		flags []string
	}{
		{name: "view", flags: []string{"--sandbox-backend", "landlock", "--offline"}, setup: func(t *testing.T, w *world) {
			skipWithoutLandlock(t)
		}},
		{name: "weaker", flags: []string{"--sandbox-backend", "landlock", "--offline"}, setup: func(t *testing.T, w *world) {
			skipWithoutLandlock(t)
			w.wrap, w.extraEnv = noUserns(t), []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
		}},
		{name: "nono", flags: []string{"--sandbox-backend", "nono", "--offline"}, setup: func(t *testing.T, w *world) {
			nonoOrSkip(t)
		}},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			w := newWorld(t, bin, e.flags)
			e.setup(t, w)
			// Outside every grant of every engine: not under /tmp, which
			// nono lets the agent read.
			outside := homeTempDir(t, "stdio")
			logPath := filepath.Join(outside, "build.log")
			inPath := filepath.Join(outside, "input.txt")
			script := strings.NewReplacer("@LOG", logPath, "@IN", inPath).Replace(`
dd if=/dev/stderr iflag=nonblock bs=4096 count=1 status=none && echo READ-STDERR
dd if=/dev/fd/2 iflag=nonblock bs=4096 count=1 status=none && echo READ-FD-2
cat @LOG && echo READ-BY-PATH
echo tampered >> /dev/stdin && echo WROTE-STDIN
echo tampered >> @IN && echo WROTE-IN-BY-PATH
cat /dev/stdin && echo stdin-reopened
echo via-dev-stderr > /dev/stderr && echo dev-stderr-ok
echo via-fd-2 >> /dev/fd/2 && echo fd2-ok
echo via-dev-stdout > /dev/stdout
true`)
			for _, sandboxed := range []bool{false, true} {
				write(t, logPath, "log-before-"+w.canary+"\n")
				write(t, inPath, "input-data\n")
				in, err := os.Open(inPath)
				if err != nil {
					t.Fatal(err)
				}
				errf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				code, out := w.runStdio(sandboxed, script, in, errf)
				in.Close()
				errf.Close()
				b, _ := os.ReadFile(logPath)
				log := string(b)
				input, _ := os.ReadFile(inPath)
				works := code == 0 && strings.Contains(out, "input-data") && strings.Contains(out, "stdin-reopened") &&
					strings.Contains(out, "dev-stderr-ok") && strings.Contains(out, "fd2-ok") && strings.Contains(out, "via-dev-stdout") &&
					strings.Contains(log, "via-dev-stderr") && strings.Contains(log, "via-fd-2")
				if !sandboxed {
					if !works || !strings.Contains(out, "READ-STDERR") || !strings.Contains(out, w.canary) {
						t.Fatalf("control: unsandboxed the script failed, or could not read the write-only stderr back (exit %d): %s\nlog: %s", code, out, log)
					}
					continue
				}
				if !works {
					t.Errorf("the streams could not be opened again by their /dev names (exit %d): %s\nlog: %s", code, out, log)
				}
				for _, bad := range []string{"READ-STDERR", "READ-FD-2", "READ-BY-PATH", w.canary} {
					// Under nono stderr is the pipe its relay drains
					// (nono.PipedFiles): opening /dev/stderr for reading
					// opens that pipe, and a read may take back what the
					// script itself wrote there a moment before (the
					// first dd's error line, when the relay is slow).
					// That is the agent's own output, never the file's:
					// the canary and READ-BY-PATH still say whether the
					// file was read.
					if e.name == "nono" && (bad == "READ-STDERR" || bad == "READ-FD-2") {
						continue
					}
					if strings.Contains(out, bad) {
						t.Errorf("a write-only stderr let the agent read its file (%s): %s", bad, out)
					}
				}
				// (Under nono the streams are pipes: a write to
				// /dev/stdin lands in the pipe, never in the file.)
				if strings.Contains(out, "WROTE-IN-BY-PATH") || strings.Contains(string(input), "tampered") {
					t.Errorf("a read-only stdin let the agent write its file: %s", out)
				}
			}
		})
	}
}
