package gitdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repoWithWorktree lays out what `git worktree add ../wt` leaves behind.
func repoWithWorktree(t *testing.T) (root, wt, gd string) {
	root, _ = filepath.EvalSymlinks(t.TempDir())
	gd = filepath.Join(root, "main", ".git", "worktrees", "wt")
	wt = filepath.Join(root, "wt")
	write(t, filepath.Join(root, "main", ".git", "HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(root, "main", ".git", "objects", "info", "packs"), "")
	write(t, filepath.Join(gd, "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(gd, "commondir"), "../..\n")
	write(t, filepath.Join(gd, "gitdir"), filepath.Join(wt, ".git")+"\n")
	write(t, filepath.Join(wt, ".git"), "gitdir: "+gd+"\n")
	return root, wt, gd
}

func TestWorktree(t *testing.T) {
	root, wt, gd := repoWithWorktree(t)
	l, err := Find(wt)
	if err != nil {
		t.Fatal(err)
	}
	if l.GitDir != gd || l.CommonDir != filepath.Join(root, "main", ".git") {
		t.Fatalf("got %+v", l)
	}
	if len(l.Dirs()) != 2 {
		t.Fatalf("dirs %v", l.Dirs())
	}
}

func TestSubmodule(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	gd := filepath.Join(root, "super", ".git", "modules", "sub")
	sub := filepath.Join(root, "super", "sub")
	write(t, filepath.Join(gd, "HEAD"), "0123\n")
	write(t, filepath.Join(gd, "config"), "[core]\n\tworktree = ../../../sub\n")
	write(t, filepath.Join(sub, ".git"), "gitdir: ../.git/modules/sub\n")
	l, err := Find(sub)
	if err != nil {
		t.Fatal(err)
	}
	if l.GitDir != gd || l.CommonDir != "" || len(l.Dirs()) != 1 {
		t.Fatalf("got %+v", l)
	}
}

func TestNoLink(t *testing.T) {
	dir := t.TempDir()
	if l, err := Find(dir); l != nil || err != nil {
		t.Fatalf("no .git: %v %v", l, err)
	}
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	if l, err := Find(dir); l != nil || err != nil {
		t.Fatalf(".git dir: %v %v", l, err)
	}
}

// TestPlantedGitFile: the agent can write .git; a file pointing anywhere but
// this tree's own linked git dir is refused (threat class 4).
func TestPlantedGitFile(t *testing.T) {
	root, wt, gd := repoWithWorktree(t)
	home := filepath.Join(root, "home")
	os.MkdirAll(home, 0o755)
	other := filepath.Join(root, "other")
	write(t, filepath.Join(other, ".git"), "gitdir: "+gd+"\n") // borrow wt's git dir
	fake := filepath.Join(root, "fake", ".git", "worktrees", "x")
	write(t, filepath.Join(fake, "HEAD"), "x")
	cases := map[string]string{
		"gitdir: " + home:           "not a linked worktree",
		"gitdir: /nonexistent/path": "does not exist",
		"not a gitdir line":         "does not hold",
		"gitdir: " + fake:           "neither a gitdir file nor a config",
		"gitdir: a\ngitdir: b":      "does not hold",
	}
	for body, want := range cases {
		write(t, filepath.Join(wt, ".git"), body)
		l, err := Find(wt)
		if l != nil || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, %v; want error with %q", body, l, err, want)
		}
	}
	if l, err := Find(other); l != nil || err == nil || !strings.Contains(err.Error(), "not this working tree") {
		t.Errorf("borrowed git dir: %v %v", l, err)
	}
	// A symlink named .git is not followed.
	os.Remove(filepath.Join(wt, ".git"))
	os.Symlink(home, filepath.Join(wt, ".git"))
	if l, err := Find(wt); l != nil {
		t.Errorf("symlinked .git granted: %v %v", l, err)
	}
}

// TestCommondirMustBeTheRepository: a planted worktree git dir whose
// commondir names an enclosing *.git directory (not its own repository) is
// refused, so the grant cannot widen to that directory.
func TestCommondirMustBeTheRepository(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outer := filepath.Join(root, "outer.git")
	wt := filepath.Join(outer, "proj")
	gd := filepath.Join(wt, "f", ".git", "worktrees", "w")
	write(t, filepath.Join(outer, "HEAD"), "x")
	write(t, filepath.Join(outer, "objects", "x"), "")
	write(t, filepath.Join(gd, "HEAD"), "x")
	write(t, filepath.Join(gd, "gitdir"), filepath.Join(wt, ".git"))
	write(t, filepath.Join(gd, "commondir"), outer)
	write(t, filepath.Join(wt, ".git"), "gitdir: "+gd)
	if l, err := Find(wt); l != nil || err == nil || !strings.Contains(err.Error(), "not <commondir>/worktrees/<name>") {
		t.Fatalf("got %+v, %v", l, err)
	}
}
