package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Issue 42: a checkpoint before every agent run, and `undo` puts the
// workdir back exactly, with the real binary under the namespace view and
// under the weaker sandbox (Landlock and seccomp only), as root and as an
// ordinary user.

// treeState is a whole tree as bytes, modes, symlink targets and
// directories (empty ones included), for an exact comparison.
func treeState(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v", rel, st.Mode())
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %q", b)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkpointWorld is a home, a project and the runner of agent-sandbox
// (prefix: the weaker sandbox's simulated host, or none for the view).
type checkpointWorld struct {
	t                *testing.T
	bin, home, work  string
	victim, state    string
	marker           string // created if host-side work ran the repository's git config
	path             string // PATH ("": agentPath())
	prefix, extraEnv []string
}

func (c *checkpointWorld) cmd(args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, c.prefix...), c.bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.work
	path := c.path
	if path == "" {
		path = agentPath()
	}
	cmd.Env = withCover(append([]string{"HOME=" + c.home, "PATH=" + path,
		"XDG_CONFIG_HOME=" + filepath.Join(c.home, ".config"), "XDG_STATE_HOME=" + c.state}, c.extraEnv...))
	return cmd
}

func (c *checkpointWorld) run(args ...string) (string, int) {
	c.t.Helper()
	out, err := c.cmd(args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return string(out), code
}

func newCheckpointWorld(t *testing.T, weaker bool) *checkpointWorld {
	c := &checkpointWorld{t: t, bin: buildAgentSandbox(t)}
	if weaker {
		c.prefix = noUserns(t)
		c.extraEnv = []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
	}
	base := homeTempDir(t, "cp")
	c.home, c.work, c.victim = filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "victim")
	c.state = filepath.Join(c.home, ".local", "state")
	for _, d := range []string{c.home, c.work, c.victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"README.md":         "# project\n",
		"src/main.go":       "package main\n",
		"src/lib/lib.go":    "package lib\n",
		".gitignore":        ".env\nnode_modules/\n",
		".env":              "API_TOKEN=abc\n",
		"tool.sh":           "#!/bin/sh\necho tool\n",
		"node_modules/x.js": "x\n",
	}
	for p, s := range files {
		full := filepath.Join(c.work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(c.work, "tool.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(c.work, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", filepath.Join(c.work, "main-link")); err != nil {
		t.Fatal(err)
	}
	// A repository whose configuration would run code (a filter the
	// agent's .gitattributes names, an fsmonitor) if anything on the host
	// ran git in it.
	if git, err := exec.LookPath("git"); err == nil {
		c.marker = filepath.Join(base, "RAN")
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "init"}} {
			cmd := exec.Command(git, args...)
			cmd.Dir = c.work
			cmd.Env = []string{"HOME=" + c.home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		f, err := os.OpenFile(filepath.Join(c.work, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "[core]\n\tfsmonitor = touch %s\n[filter \"evil\"]\n\tclean = touch %s\n\tsmudge = touch %s\n", c.marker, c.marker, c.marker)
		f.Close()
	}
	return c
}

func TestCheckpointUndo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	for _, engine := range []string{"view", "weaker", "nono"} {
		t.Run(engine, func(t *testing.T) {
			c := newCheckpointWorld(t, engine == "weaker")
			backend := "landlock"
			if engine == "nono" {
				nono := nonoOrSkip(t)
				backend = "nono"
				c.path = filepath.Dir(nono) + ":" + agentPath()
			}
			before := treeState(t, c.work)
			store := filepath.Join(c.state, "agent-sandbox", "checkpoints")
			// The agent's damage: rm -rf, a rewritten file, the ignored
			// .env deleted, untracked files, an empty directory, a 0600
			// file, a mode changed, a .gitattributes filter, a symlink to
			// a directory outside in place of src/, and tries on the store.
			script := strings.Join([]string{
				"rm -rf src main-link",
				"echo rewritten > README.md",
				"rm .env",
				"echo new > untracked.txt; mkdir -p new/deeper; echo n > new/deeper/f",
				"mkdir newempty",
				"(umask 077; echo private > private.key)",
				"chmod 600 tool.sh",
				"printf '* filter=evil\\n' > .gitattributes",
				"ln -s " + c.victim + " src",
				"rm -rf .git/objects/* 2>/dev/null",
				"for f in " + store + "/*/format " + store + "/*/manifests/*; do echo x > \"$f\" && echo STORE-WRITTEN; done 2>/dev/null",
				"ls " + store + " 2>/dev/null && echo STORE-LISTED",
				"true",
			}, "; ")
			out, code := c.run("--sandbox-backend", backend, "shell", "-c", script)
			if code != 0 || strings.Contains(out, "STORE-") {
				t.Fatalf("agent run: exit %d, or it reached the store: %s", code, out)
			}
			damaged := treeState(t, c.work)
			if damaged == before {
				t.Fatal("control: the agent changed nothing")
			}
			if c.marker != "" {
				if err := exec.Command("git", "-C", c.work, "cat-file", "-e", "HEAD^{tree}").Run(); err == nil {
					t.Fatal("control: the agent's rm -rf .git/objects/* left the repository's objects")
				}
			}

			out, code = c.run("runs")
			if code != 0 || !strings.Contains(out, "shell") || !strings.Contains(out, "checkpoint ") {
				t.Fatalf("runs: exit %d: %s", code, out)
			}
			out, code = c.run("diff")
			for _, want := range []string{"deleted   .env", "modified  README.md", "created   private.key", "mode      tool.sh (mode 0755 -> 0600)", "created   newempty/", "replaced  src (dir -> symlink"} {
				if !strings.Contains(out, want) {
					t.Errorf("diff (exit %d) lacks %q: %s", code, want, out)
				}
			}

			// Without --yes and without a terminal: only shown.
			out, code = c.run("undo")
			if code != 0 || !strings.Contains(out, "nothing changed") || treeState(t, c.work) != damaged {
				t.Fatalf("undo without --yes (exit %d) changed the tree: %s", code, out)
			}
			out, code = c.run("undo", "--yes")
			if code != 0 {
				t.Fatalf("undo --yes: exit %d: %s", code, out)
			}
			if got := treeState(t, c.work); got != before {
				t.Fatalf("undo did not restore the checkpoint:\n got: %s\nwant: %s\n(%s)", got, before, out)
			}
			if ents, _ := os.ReadDir(c.victim); len(ents) != 0 {
				t.Fatalf("undo wrote through the planted symlink into %s: %v", c.victim, ents)
			}
			if c.marker != "" {
				if _, err := os.Stat(c.marker); err == nil {
					t.Fatal("host-side work ran the repository's filter or fsmonitor")
				}
				if out, err := exec.Command("git", "-C", c.work, "cat-file", "-e", "HEAD^{tree}").CombinedOutput(); err != nil {
					t.Fatalf("the repository's objects were not restored: %v: %s", err, out)
				}
			}
			// The undo of the undo brings the agent's state back.
			out, code = c.run("undo", "--yes")
			if code != 0 || treeState(t, c.work) != damaged {
				t.Fatalf("undo of the undo: exit %d: %s\n got: %s\nwant: %s", code, out, treeState(t, c.work), damaged)
			}
		})
	}
}

// TestCheckpointUndoRefusesLiveRun: undo refuses while a run is live in the
// workdir, and a run with --checkpoint=required that cannot checkpoint
// does not start.
func TestCheckpointUndoRefusesLiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	c := newCheckpointWorld(t, false)
	fifo := filepath.Join(c.work, "go.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := c.cmd("--sandbox-backend", "landlock", "-v", "shell", "-c", "echo READY; read x < go.fifo; echo changed > README.md")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "READY" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the agent did not start: %q %s", line, errb.String())
	}
	out, code := c.run("undo", "--yes")
	// Let the agent end.
	if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		f.WriteString("go\n")
		f.Close()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent run: %v: %s", err, errb.String())
	}
	if code != 125 || !strings.Contains(out, "a run is live") {
		t.Fatalf("undo during a run: exit %d, want 125 and a refusal: %s", code, out)
	}
	if !strings.Contains(errb.String(), "go.fifo (special file)") {
		t.Errorf("the checkpoint did not name the special file it skipped: %s", errb.String())
	}
	// Now it works, and leaves the FIFO (not kept) as it is.
	out, code = c.run("undo", "--yes")
	if b, _ := os.ReadFile(filepath.Join(c.work, "README.md")); code != 0 || string(b) != "# project\n" {
		t.Fatalf("undo after the run: exit %d, README %q: %s", code, b, out)
	}
	// A store that cannot be written: --checkpoint=required refuses the
	// run before the agent starts; the default only warns.
	if err := os.RemoveAll(filepath.Join(c.state, "agent-sandbox", "checkpoints")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.state, "agent-sandbox", "checkpoints"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	started := filepath.Join(c.work, "started")
	out, code = c.run("--sandbox-backend", "landlock", "--checkpoint=required", "shell", "-c", "touch started")
	if _, err := os.Stat(started); err == nil || code != 125 {
		t.Fatalf("--checkpoint=required with a broken store: exit %d, agent started: %v: %s", code, err == nil, out)
	}
	out, code = c.run("--sandbox-backend", "landlock", "shell", "-c", "touch started")
	if _, err := os.Stat(started); err != nil || code != 0 || !strings.Contains(out, "without a checkpoint") {
		t.Fatalf("default mode with a broken store: exit %d, want a warning and the run: %s", code, out)
	}
}
