package worktree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	good := []string{"a", "feature/x", "agent-sandbox/pi-0a1b2c3d", "v1.2", "a%b", "ünï"}
	bad := []string{"", "@", "-x", "/a", "a/", "a.", "a..b", "a@{b", "a//b", "a b", "a~b", "a^b", "a:b", "a?b", "a*b", "a[b", "a\\b", "a\x01b", ".a", "a/.b", "a.lock", "a/b.lock/c"}
	for _, n := range good {
		if err := CheckName(n); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", n, err)
		}
	}
	for _, n := range bad {
		err := CheckName(n)
		if err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", n)
			continue
		}
		if want := fmt.Sprintf("--worktree=%q", n); !strings.Contains(err.Error(), want) {
			t.Errorf("CheckName(%q) = %v: does not name the value", n, err)
		}
	}
	// git agrees where it is installed.
	if git, err := exec.LookPath("git"); err == nil {
		for _, n := range append(append([]string{}, good...), bad...) {
			if n == "" || n == "@" || strings.HasPrefix(n, "-") {
				// git takes these for HEAD's shorthand or an option.
				continue
			}
			gitOK := exec.Command(git, "check-ref-format", "--branch", n).Run() == nil
			if ours := CheckName(n) == nil; ours != gitOK {
				t.Errorf("%q: CheckName says %v, git check-ref-format --branch says %v", n, ours, gitOK)
			}
		}
	}
}

func TestDirName(t *testing.T) {
	for _, b := range []string{"a", "a/b", "a%2Fb", "x%/y"} {
		if got := branchOf(dirName(b)); got != b {
			t.Errorf("branchOf(dirName(%q)) = %q", b, got)
		}
		if strings.Contains(dirName(b), "/") {
			t.Errorf("dirName(%q) = %q holds a '/'", b, dirName(b))
		}
	}
	if dirName("a/b") == dirName("a%2Fb") {
		t.Error("two branches share a directory")
	}
}

// repo makes a repository with one commit whose configuration would run
// code (a marker) if the host-side work honoured it.
func repo(t *testing.T) (dir, marker string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	base := t.TempDir()
	dir, marker = filepath.Join(base, "proj"), filepath.Join(base, "RAN")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.go filter=evil\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "init"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	f, _ := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[core]\n\tfsmonitor = touch " + marker + "\n\thooksPath = " + base + "\n[filter \"evil\"]\n\tsmudge = touch " + marker + "\n\tclean = touch " + marker + "\n")
	f.Close()
	os.WriteFile(filepath.Join(base, "post-checkout"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	return dir, marker
}

func TestCreate(t *testing.T) {
	proj, marker := repo(t)
	git, _ := exec.LookPath("git")
	root := filepath.Join(t.TempDir(), "store")
	l, err := Plan(root, proj, "", "pi")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.Branch, "agent-sandbox/pi-") || l.Exists {
		t.Fatalf("layout %+v", l)
	}
	h, err := Create(l, git, "pi")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("making the tree ran the project's configuration")
	}
	if b, err := os.ReadFile(filepath.Join(l.Tree, "a.go")); err != nil || string(b) != "package a\n" {
		t.Errorf("the tree's checkout: %v %q", err, b)
	}
	if b, _ := os.ReadFile(filepath.Join(l.Tree, ".git", "objects", "info", "alternates")); string(b) != l.ObjectsLink+"\n" {
		t.Errorf("alternates = %q", b)
	}
	if target, _ := os.Readlink(l.ObjectsLink); target != l.Objects {
		t.Errorf("the objects link points at %q", target)
	}
	head, err := Git(git, "--git-dir="+filepath.Join(l.Tree, ".git"), "symbolic-ref", "HEAD")
	if err != nil || head != "refs/heads/"+l.Branch {
		t.Errorf("HEAD = %q (%v)", head, err)
	}
	if _, err := Git(git, "--git-dir="+filepath.Join(l.Tree, ".git"), "fsck", "--strict"); err != nil {
		t.Error(err)
	}
	// Held: a second Create of the same tree is refused.
	if _, err := Create(l, git, "pi"); err == nil || !strings.Contains(err.Error(), "another run is using the tree") {
		t.Errorf("second Create while held: %v", err)
	}
	h.Release()
	ms, err := List(root, proj)
	if err != nil || len(ms) != 1 || ms[0].Branch != l.Branch || ms[0].Tree != l.Tree || ms[0].Agent != "pi" {
		t.Errorf("List = %+v, %v", ms, err)
	}
	// Reused by name: taken as it is, unless its .git was replaced by a
	// symlink.
	l2, err := Plan(root, proj, l.Branch, "pi")
	if err != nil || !l2.Exists {
		t.Fatalf("Plan again: %+v %v", l2, err)
	}
	h2, err := Create(l2, git, "pi")
	if err != nil {
		t.Fatal(err)
	}
	h2.Release()
	os.Rename(filepath.Join(l.Tree, ".git"), filepath.Join(l.Tree, "git-aside"))
	os.Symlink(filepath.Join(proj, ".git"), filepath.Join(l.Tree, ".git"))
	if _, err := Create(l2, git, "pi"); err == nil || !strings.Contains(err.Error(), "is not a directory any more") {
		t.Errorf("Create over a .git symlink: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, ".git", "objects", "info", "alternates")); len(b) != 0 {
		t.Errorf("the project's alternates were written through the link: %q", b)
	}
}

func TestPlanRefuses(t *testing.T) {
	proj, _ := repo(t)
	root := filepath.Join(t.TempDir(), "store")
	for _, c := range []struct{ root, project, name, want string }{
		{root, proj, "a..b", `--worktree="a..b"`},
		{filepath.Join(proj, "store"), proj, "a", "must lie outside the project"},
		{"store", proj, "a", "want an absolute path"},
		{root, t.TempDir(), "a", "is not the top of a git repository"},
	} {
		if _, err := Plan(c.root, c.project, c.name, "pi"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Plan(%q, %q, %q) = %v, want %q", c.root, c.project, c.name, err, c.want)
		}
	}
	os.WriteFile(filepath.Join(proj, ".git", "objects", "info", "alternates"), []byte("/elsewhere\n"), 0o644)
	if _, err := Plan(root, proj, "a", "pi"); err == nil || !strings.Contains(err.Error(), "borrows objects from another") {
		t.Errorf("a project with alternates: %v", err)
	}
}

// BenchmarkCreate makes a fresh tree of a repository of
// AGENT_SANDBOX_BENCH_REPO (default: a 1,000-file repository made here):
// what a --worktree run adds before the agent starts.
func BenchmarkCreate(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	proj := os.Getenv("AGENT_SANDBOX_BENCH_REPO")
	if proj == "" {
		proj = filepath.Join(b.TempDir(), "proj")
		for i := 0; i < 1000; i++ {
			p := filepath.Join(proj, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.txt", i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(strings.Repeat("x", 2000)+fmt.Sprint(i)), 0o644)
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "init"}} {
			cmd := exec.Command(git, args...)
			cmd.Dir, cmd.Env = proj, Env()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
	}
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Plan(root, proj, fmt.Sprintf("b%d", i), "bench")
		if err != nil {
			b.Fatal(err)
		}
		h, err := Create(l, git, "bench")
		if err != nil {
			b.Fatal(err)
		}
		h.Release()
	}
}
