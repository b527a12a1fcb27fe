package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Two ways an agent could redirect the host's git, found by review after
// the protected files landed: a .git/commondir created during the run
// (no mount can keep a missing file read-only), and a .git/info replaced
// by a symlink, through which a later run's info/exclude lines would be
// written elsewhere.

func gitRepoCommitted(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", dir}, {"-C", dir, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// TestProtectPlantedCommondir: the agent builds a repository of its own
// (with core.fsmonitor) and creates .git/commondir pointing at it. Pass:
// the missing commondir is a read-only placeholder during the run, gone
// after it, and the host's git status runs nothing. Control: unsandboxed, git status runs
// the planted command.
func TestProtectPlantedCommondir(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git (.ci/run does)")
	}
	plant := func(work, pwned string) string {
		return `set -e; cd ` + work + `
mkdir -p evilgit && cp -r .git/HEAD .git/refs .git/objects evilgit/
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch ` + pwned + `; false"\n' > evilgit/config
echo ../evilgit > .git/commondir`
	}
	// Control.
	r := newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	pwned := filepath.Join(filepath.Dir(r.home), "PWNED-control")
	if code, out := r.cli(60*time.Second, nil, "--no-sandbox", r.folder(), "-c", plant(r.work, pwned)); code != 0 {
		t.Fatalf("control: the plant failed unsandboxed (exit %d): %s", code, out)
	}
	exec.Command("git", "-C", r.work, "status").Run()
	if _, err := os.Stat(pwned); err != nil {
		t.Skipf("control: this git does not follow a planted commondir (%v), so the case proves nothing here", err)
	}

	r = newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	pwned = filepath.Join(filepath.Dir(r.home), "PWNED")
	// The missing commondir is a read-only placeholder holding "." for
	// the run (git reads "." as the git dir itself): the plant fails, and
	// the placeholder is gone after the run.
	_, out := r.run(60*time.Second, nil, r.folder(), "-c", plant(r.work, pwned))
	if !strings.Contains(out, "commondir") {
		t.Errorf("the plant's failure does not name commondir: %s", out)
	}
	if _, err := os.Lstat(filepath.Join(r.work, ".git", "commondir")); err == nil {
		t.Errorf("a .git/commondir is in place after the run")
	}
	exec.Command("git", "-C", r.work, "status").Run()
	if _, err := os.Stat(pwned); err == nil {
		t.Errorf("the host's git status ran the agent's fsmonitor")
	}
	// Neighbour: an ordinary commit inside works and leaves no warning.
	n := newBrokerRun(t)
	gitRepoCommitted(t, n.work)
	code, out := n.run(60*time.Second, nil, n.folder(), "-c", `cd `+n.work+` && echo x > f && git add f && git -c user.name=a -c user.email=a@e commit -qm second && git log --oneline | wc -l`)
	if code != 0 || !strings.Contains(out, "2") || strings.Contains(out, "commondir") {
		t.Errorf("neighbour: a commit inside failed or was reported (exit %d): %s", code, out)
	}
}

// TestProtectExcludeThroughSymlink: a previous run left .git/info as a
// symlink to a directory outside the project. Pass: the next run, which
// lists its placeholders in info/exclude, writes nothing there.
func TestProtectExcludeThroughSymlink(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git (.ci/run does)")
	}
	r := newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	outside := filepath.Join(filepath.Dir(r.home), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// Run 1: the agent replaces .git/info (its own to write).
	code, out := r.run(60*time.Second, nil, r.folder(), "-c", `cd `+r.work+` && rm -rf .git/info && ln -s `+outside+` .git/info`)
	if code != 0 {
		t.Fatalf("run 1 failed (exit %d): %s", code, out)
	}
	// Run 2 needs placeholders (.mcp.json, .envrc... are missing).
	code, out = r.run(60*time.Second, nil, r.folder(), "-c", "true")
	if _, err := os.Stat(filepath.Join(outside, "exclude")); err == nil {
		b, _ := os.ReadFile(filepath.Join(outside, "exclude"))
		t.Errorf("run 2 wrote through the symlinked .git/info (exit %d): %q\n%s", code, b, out)
	}
}

// TestProtectSharedGitDir: two runs in one repository, one in its main
// working tree and one in a linked worktree, both keep the repository's
// .git/config.worktree read-only. It does not exist, so the first run
// creates a placeholder for it. When that run ends first, the placeholder
// must stay while the second still binds it: removing it would detach the
// second run's read-only bind, and its agent could then write the file,
// which the host's git reads (found by the review of the placeholder
// stash; before the fix the second agent wrote it).
func TestProtectSharedGitDir(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git (.ci/run does)")
	}
	a := newBrokerRun(t)
	gitRepoCommitted(t, a.work)
	wt := filepath.Join(filepath.Dir(a.work), "wt")
	if out, err := exec.Command("git", "-C", a.work, "worktree", "add", "-q", wt).CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v %s", err, out)
	}
	target := filepath.Join(a.work, ".git", "config.worktree")
	b := *a
	b.work = wt
	// The order is made by events, not delays: the first agent runs
	// (its run has made its placeholders) and waits; the second starts
	// and waits; the first ends; only then does the second write.
	readyA, goA := filepath.Join(a.work, "ready-a"), filepath.Join(a.work, "go-a")
	readyB, goB := filepath.Join(wt, "ready-b"), filepath.Join(wt, "go-b")
	first := make(chan string, 1)
	go func() {
		_, out := a.run(60*time.Second, nil, a.folder(), "-c", ": > "+readyA+"; while [ ! -e "+goA+" ]; do sleep 0.01; done")
		first <- out
	}()
	waitPath(t, readyA, 30*time.Second)
	type result struct {
		code int
		out  string
	}
	second := make(chan result, 1)
	go func() {
		code, out := b.run(60*time.Second, nil, b.folder(), "-c",
			": > "+readyB+"; while [ ! -e "+goB+" ]; do sleep 0.01; done; if printf '[core]\\n\\tfsmonitor = x\\n' > "+target+" 2>/dev/null; then echo WROTE; else echo blocked; fi")
		second <- result{code, out}
	}()
	waitPath(t, readyB, 30*time.Second)
	os.WriteFile(goA, nil, 0o644)
	firstOut := <-first
	os.WriteFile(goB, nil, 0o644)
	res := <-second
	code, out := res.code, res.out
	if code != 0 || !strings.Contains(out, "blocked") {
		t.Errorf("the second run's agent wrote %s after the first run ended (exit %d): %s\nfirst run: %s", target, code, out, firstOut)
	}
	if got, _ := os.ReadFile(target); strings.Contains(string(got), "fsmonitor") {
		t.Errorf("%s on the host holds %q", target, got)
	}
}
