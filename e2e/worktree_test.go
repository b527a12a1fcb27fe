package e2e

// --worktree runs (issue 42 item 4), with the real binary and the real
// sandbox: the tree is shown at the workdir's path, git works there, the
// project's files and repository are untouched, two concurrent runs of one
// repository cannot reach each other's branch (one attacks: update-ref,
// writes into the project's objects, gc --prune=now, worktree prune), a
// bad NAME is refused, and the weaker sandbox runs the agent at the tree's
// real path and says so.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// worktreeWorld is a checkpointWorld whose project is a git repository
// with a configuration that would run code (the marker) if host-side work
// ran git with it.
func newWorktreeWorld(t *testing.T, weaker bool) *checkpointWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	c := newCheckpointWorld(t, weaker)
	// The agent's .gitattributes names the evil filter: a checkout that
	// honoured the project's configuration would run it.
	if err := os.WriteFile(filepath.Join(c.work, ".gitattributes"), []byte("*.go filter=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.git(c.work, "add", "-A")
	c.git(c.work, "commit", "-qm", "attributes")
	return c
}

// git runs git in dir with a clean configuration (the test's own view of
// the repositories; never the one under test) and returns its output.
func (c *checkpointWorld) git(dir string, args ...string) string {
	c.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "core.fsmonitor=false", "-c", "filter.evil.clean=cat", "-c", "filter.evil.smudge=cat"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + c.home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("git %v in %s: %v: %s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// worktreePlan is the dry-run's "worktree" for --worktree=name.
func (c *checkpointWorld) worktreePlan(name string) (tree, link string) {
	c.t.Helper()
	out, err := c.cmd("run", "--worktree="+name, "--dry-run", "--json", "--", "true").Output()
	if err != nil {
		c.t.Fatalf("dry run: %v: %s", err, out)
	}
	var p struct {
		Worktree *struct {
			Tree        string `json:"tree"`
			ObjectsLink string `json:"objects_link"`
			Branch      string `json:"branch"`
		} `json:"worktree"`
	}
	if err := json.Unmarshal(out, &p); err != nil || p.Worktree == nil || p.Worktree.Branch != name {
		c.t.Fatalf("dry run JSON has no worktree for %s (%v): %s", name, err, out)
	}
	return p.Worktree.Tree, p.Worktree.ObjectsLink
}

// projectState is what the project's repository and files are: its refs,
// its fsck, its object files and its files' bytes.
func (c *checkpointWorld) projectState() string {
	c.t.Helper()
	var objs []string
	_ = filepath.Walk(filepath.Join(c.work, ".git", "objects"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			objs = append(objs, p)
		}
		return nil
	})
	return c.git(c.work, "for-each-ref") + "\n" + c.git(c.work, "fsck", "--strict") + "\n" +
		strings.Join(objs, "\n") + "\n" + c.git(c.work, "status", "--porcelain", "--ignored") + "\n" + treeState(c.t, c.work)
}

func TestWorktreeView(t *testing.T) {
	c := newWorktreeWorld(t, false)
	before := c.projectState()
	tree, _ := c.worktreePlan("feature/x")
	script := fmt.Sprintf(`set -e
test "$(pwd)" = %q || { echo "cwd $(pwd)"; exit 3; }
test "$(git rev-parse --show-toplevel)" = %q
git status --porcelain | grep -v '^??' || true
echo changed >> README.md
rm src/main.go
echo new > new.txt
git add -A
git -c user.name=a -c user.email=a@a.invalid commit -qm agent-work
git log --format=%%s -1
echo on-branch=$(git symbolic-ref --short HEAD)
# The protected entries stay read-only at the workdir's path too.
(echo '[core]' >> .git/config) 2>/dev/null && echo WROTE-CONFIG
(echo '#!/bin/sh' > .git/hooks/pre-commit) 2>/dev/null && echo WROTE-HOOK
(mv .git .git-aside) 2>/dev/null && echo MOVED-GIT
true
`, c.work, c.work)
	out, code := c.run("run", "--worktree=feature/x", "--", "sh", "-c", script)
	if code != 0 || !strings.Contains(out, "agent-work") || !strings.Contains(out, "on-branch=feature/x") {
		t.Fatalf("the worktree run failed (exit %d): %s", code, out)
	}
	for _, bad := range []string{"WROTE-CONFIG", "WROTE-HOOK", "MOVED-GIT"} {
		if strings.Contains(out, bad) {
			t.Errorf("a protected entry was writable at the workdir's path (%s): %s", bad, out)
		}
	}
	if !strings.Contains(out, "is shown at "+c.work) {
		t.Errorf("the run does not say where the tree is shown: %s", out)
	}
	if after := c.projectState(); after != before {
		t.Errorf("the project changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, err := os.Stat(c.marker); err == nil {
		t.Errorf("host-side work ran the project's git configuration (marker %s exists)", c.marker)
	}
	if got := c.git(tree, "log", "--format=%s", "-1", "feature/x"); got != "agent-work" {
		t.Errorf("the tree's branch has %q, want agent-work", got)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("the agent's file is not in the tree %s: %v %q", tree, err, b)
	}
	out, code = c.run("runs")
	if code != 0 || !strings.Contains(out, "branch feature/x") || !strings.Contains(out, tree) {
		t.Errorf("runs does not list the worktree run (exit %d): %s", code, out)
	}
	// Merging is plain git, run by the user in the project.
	c.git(c.work, "fetch", "-q", tree, "feature/x:feature/x")
	if got := c.git(c.work, "log", "--format=%s", "-1", "feature/x"); got != "agent-work" {
		t.Errorf("after the fetch the project's feature/x is %q", got)
	}
	c.git(c.work, "fsck", "--strict")
	// A second run with the same NAME goes on in the same tree.
	out, code = c.run("run", "--worktree=feature/x", "--checkpoint", "--", "sh", "-c", "git log --format=%s -1; test -f new.txt; rm new.txt")
	if code != 0 || !strings.Contains(out, "agent-work") {
		t.Errorf("a second run with the same NAME did not find the tree (exit %d): %s", code, out)
	}
	// Its checkpoint is the tree's, not the project's.
	if out, _ := c.run("runs", "--workdir", tree); !strings.Contains(out, "1 deleted") {
		t.Errorf("the tree's runs do not record the worktree run's checkpoint: %s", out)
	}
	if out, _ := c.run("runs"); !strings.Contains(out, "no runs recorded for "+c.work) {
		t.Errorf("the project has a checkpoint of a worktree run: %s", out)
	}
}

func TestWorktreeConcurrentAttack(t *testing.T) {
	c := newWorktreeWorld(t, false)
	sync0 := filepath.Join(filepath.Dir(c.work), "sync")
	if err := os.MkdirAll(sync0, 0o755); err != nil {
		t.Fatal(err)
	}
	treeA, linkA := c.worktreePlan("a")
	treeB, _ := c.worktreePlan("b")
	storeB := filepath.Dir(treeB)
	before := c.projectState()
	wait := func(name string) string {
		return fmt.Sprintf(`i=0; while [ ! -e %s/%s ]; do i=$((i+1)); [ $i -gt 600 ] && { echo timeout %s; exit 9; }; sleep 0.1; done`, sync0, name, name)
	}
	victim := fmt.Sprintf(`set -e
echo b-work > b.txt
git add -A
git -c user.name=b -c user.email=b@b.invalid commit -qm b-work
touch %s/b-committed
%s
git fsck --strict
echo b-head=$(git log --format=%%s -1 b)
`, sync0, wait("a-done"))
	attacker := fmt.Sprintf(`%s
# Its own repository: these reach only the tree's own refs and objects.
git update-ref refs/heads/b HEAD && echo updated-own-b
git -c user.name=a -c user.email=a@a.invalid commit -q --allow-empty -m a-work
# The other run's tree and the store are not in the view.
ls %s 2>/dev/null && echo SAW-B
echo x > %s/b.txt 2>/dev/null && echo WROTE-B
git --git-dir=%s/.git update-ref refs/heads/b HEAD 2>/dev/null && echo MOVED-B
# The project's objects, read-only where the alternates name them.
touch %s/evil 2>/dev/null && echo WROTE-OBJECTS
for f in $(find %s -type f | head -5); do chmod u+w "$f" 2>/dev/null; true 2>/dev/null > "$f" && echo TRUNCATED-OBJECT; rm -f "$f" 2>/dev/null && [ ! -e "$f" ] && echo REMOVED-OBJECT; done
git gc --prune=now -q && echo gc-ran
git worktree prune && echo prune-ran
git repack -adq && echo repack-ran
git fsck --strict && echo a-fsck-ok
touch %s/a-done
`, wait("b-committed"), storeB, treeB, treeB, linkA, linkA, sync0)
	var wg sync.WaitGroup
	var outA, outB string
	var codeA, codeB int
	wg.Add(2)
	go func() {
		defer wg.Done()
		outB, codeB = c.run("run", "--worktree=b", "--write", sync0, "--", "sh", "-c", victim)
	}()
	go func() {
		defer wg.Done()
		outA, codeA = c.run("run", "--worktree=a", "--write", sync0, "--", "sh", "-c", attacker)
	}()
	wg.Wait()
	if codeA != 0 || !strings.Contains(outA, "gc-ran") || !strings.Contains(outA, "a-fsck-ok") {
		t.Errorf("the attacking run did not run its attacks (exit %d): %s", codeA, outA)
	}
	for _, bad := range []string{"SAW-B", "WROTE-B", "MOVED-B", "WROTE-OBJECTS", "TRUNCATED-OBJECT", "REMOVED-OBJECT"} {
		if strings.Contains(outA, bad) {
			t.Errorf("the attacker got through (%s): %s", bad, outA)
		}
	}
	if codeB != 0 || !strings.Contains(outB, "b-head=b-work") {
		t.Errorf("the other run's work did not survive (exit %d): %s", codeB, outB)
	}
	if got := c.git(treeB, "log", "--format=%s", "-1", "b"); got != "b-work" {
		t.Errorf("b's branch is %q after the attack, want b-work", got)
	}
	c.git(treeB, "fsck", "--strict")
	if got := c.git(treeA, "log", "--format=%s", "-1", "a"); got != "a-work" {
		t.Errorf("a's own branch is %q", got)
	}
	if after := c.projectState(); after != before {
		t.Errorf("the project changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestWorktreeBadName(t *testing.T) {
	c := newWorktreeWorld(t, false)
	for _, name := range []string{"bad..name", "x.lock", "-x", "a b", "@"} {
		out, code := c.run("run", "--worktree="+name, "--", "true")
		if code != 125 || !strings.Contains(out, fmt.Sprintf("%q", name)) {
			t.Errorf("--worktree=%s: exit %d, want 125 and the value named: %s", name, code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(c.state, "agent-sandbox-worktrees")); err == nil {
		t.Errorf("a refused NAME made the store")
	}
}

func TestWorktreeWeaker(t *testing.T) {
	c := newWorktreeWorld(t, true)
	before := c.projectState()
	out, code := c.run("run", "--worktree=w", "--dry-run", "--json", "--", "true")
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, out)
	}
	var p struct {
		Worktree struct{ Tree, Objects string } `json:"worktree"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &p); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tree := p.Worktree.Tree
	script := fmt.Sprintf(`test "$(pwd)" = %q || { echo "cwd $(pwd)"; exit 3; }
echo w > w.txt
git add -A && git -c user.name=w -c user.email=w@w.invalid commit -qm weaker-work && echo committed
touch %s/evil 2>/dev/null && echo WROTE-PROJECT
touch %s/evil 2>/dev/null && echo WROTE-OBJECTS
cat %s/README.md >/dev/null 2>&1 && echo READ-PROJECT
exit 0
`, tree, c.work, p.Worktree.Objects, c.work)
	out, code = c.run("run", "--worktree=w", "--", "sh", "-c", script)
	if code != 0 || !strings.Contains(out, "committed") {
		t.Fatalf("the weaker worktree run failed (exit %d): %s", code, out)
	}
	if !strings.Contains(out, "the agent runs at the tree's real path "+tree) {
		t.Errorf("the run does not say that it runs at the tree's real path: %s", out)
	}
	for _, bad := range []string{"WROTE-PROJECT", "WROTE-OBJECTS", "READ-PROJECT"} {
		if strings.Contains(out, bad) {
			t.Errorf("the weaker sandbox let the agent reach the project (%s): %s", bad, out)
		}
	}
	if got := c.git(tree, "log", "--format=%s", "-1", "w"); got != "weaker-work" {
		t.Errorf("the tree's branch is %q", got)
	}
	if after := c.projectState(); after != before {
		t.Errorf("the project changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestWorktreeNono: under nono, inside the view (nono-in-view) and alone
// (no user namespaces): the agent works in the tree at its real path (nono
// starts it in its --workdir), git reads the project's objects through the
// alternates, and neither the project's files nor its objects are
// writable.
func TestWorktreeNono(t *testing.T) {
	nono := nonoOrSkip(t)
	for _, alone := range []bool{false, true} {
		name := map[bool]string{false: "nono-in-view", true: "nono-alone"}[alone]
		t.Run(name, func(t *testing.T) {
			c := newWorktreeWorld(t, false)
			if alone {
				c.prefix = noUserns(t)
			}
			c.path = filepath.Dir(nono) + ":" + agentPath()
			before := c.projectState()
			tree, link := c.worktreePlan("n")
			script := fmt.Sprintf(`test "$(pwd)" = %q || { echo "cwd $(pwd)"; exit 3; }
git log --format=%%s -1
echo n > n.txt
git add -A && git -c user.name=n -c user.email=n@n.invalid commit -qm nono-work && echo committed
touch %s/evil 2>/dev/null && echo WROTE-OBJECTS
touch %s/.git/objects/evil 2>/dev/null && echo WROTE-PROJECT-OBJECTS
exit 0
`, tree, link, c.work)
			out, code := c.run("--sandbox-backend", "nono", "run", "--worktree=n", "--", "sh", "-c", script)
			if code != 0 || !strings.Contains(out, "committed") {
				t.Fatalf("the nono worktree run failed (exit %d): %s", code, out)
			}
			if !strings.Contains(out, "runs at the tree's real path "+tree) {
				t.Errorf("the run does not say where the agent runs: %s", out)
			}
			bads := []string{"WROTE-OBJECTS"}
			if alone {
				// In the view the project's path shows the tree: its
				// .git/objects there is the tree's own (projectState
				// checks the project's).
				bads = append(bads, "WROTE-PROJECT-OBJECTS")
			}
			for _, bad := range bads {
				if strings.Contains(out, bad) {
					t.Errorf("the agent wrote the project's objects (%s): %s", bad, out)
				}
			}
			if got := c.git(tree, "log", "--format=%s", "-1", "n"); got != "nono-work" {
				t.Errorf("the tree's branch is %q", got)
			}
			if after := c.projectState(); after != before {
				t.Errorf("the project changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestWorktreeLiveReplace: the host replaces the tree's .git/config (a
// rename over it, as git config does) while the agent runs; the view puts
// the read-only bind back at the tree's path and at the workdir's path,
// where the agent writes: its write is refused, and the host's file is
// what the host wrote.
func TestWorktreeLiveReplace(t *testing.T) {
	skipWithoutLandlock(t)
	c := newWorktreeWorld(t, false)
	sync0 := filepath.Join(filepath.Dir(c.work), "sync")
	if err := os.MkdirAll(sync0, 0o755); err != nil {
		t.Fatal(err)
	}
	tree, _ := c.worktreePlan("live")
	ready, replaced := filepath.Join(sync0, "ready"), filepath.Join(sync0, "replaced")
	script := fmt.Sprintf(`: > %[1]s
i=0; while [ ! -e %[2]s ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 9; sleep 0.01; done
grep -q 'on the host' %[3]s/.git/config && echo SAW-REPLACEMENT
if printf 'planted\n' >> %[3]s/.git/config 2>/dev/null; then echo WROTE; else echo DENIED; fi`, ready, replaced, c.work)
	done := make(chan struct{})
	var out string
	var code int
	go func() {
		defer close(done)
		out, code = c.run("run", "--worktree=live", "--write", sync0, "--", "sh", "-c", script)
	}()
	waitPath(t, ready, 30*time.Second)
	host := "[core]\n\tbare = false\n# replaced on the host\n"
	replaceFile(t, filepath.Join(tree, ".git", "config"), host)
	time.Sleep(300 * time.Millisecond)
	os.WriteFile(replaced, nil, 0o644)
	<-done
	if code != 0 || !strings.Contains(out, "SAW-REPLACEMENT") {
		t.Fatalf("the agent did not see the host's replacement at the workdir's path (exit %d): %s", code, out)
	}
	after, _ := os.ReadFile(filepath.Join(tree, ".git", "config"))
	if !strings.Contains(out, "DENIED") || string(after) != host {
		t.Errorf("the agent wrote the tree's .git/config at the workdir's path after the host replaced it (%q): %s", after, out)
	}
}
