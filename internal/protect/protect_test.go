package protect

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mk(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func paths(ps []Path) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Path)
	}
	return out
}

func TestFor(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.git/HEAD", w+"/.git/config", w+"/.git/hooks/", w+"/.git/modules/sub/HEAD", w+"/.git/worktrees/side/HEAD")
	main := filepath.Join(root, "main", ".git")
	side := filepath.Join(main, "worktrees", "wt")
	mk(t, main+"/HEAD", side+"/HEAD")
	sm := filepath.Join(root, "super", ".git", "modules", "m")
	mk(t, sm+"/HEAD")
	gitfile := filepath.Join(root, "gf")
	mk(t, gitfile+"/.git")

	for _, tc := range []struct {
		name                    string
		workdir, gitDir, common string
		allow                   []string
		want, not               []string
	}{
		{name: "repository", workdir: w,
			want: []string{w + "/.git/config", w + "/.git/config.worktree", w + "/.git/hooks", w + "/.vscode", w + "/.idea", w + "/.codex",
				w + "/.claude/settings.json", w + "/.claude/settings.local.json", w + "/.claude/commands", w + "/.claude/agents",
				w + "/.mcp.json", w + "/.gitmodules", w + "/.envrc",
				w + "/.git/modules/sub/config", w + "/.git/modules/sub/hooks", w + "/.git/worktrees/side/config.worktree"},
			not: []string{w + "/.git", w + "/.git/worktrees/side/hooks", w + "/.git/worktrees/side/config"}},
		{name: "allow-edit", workdir: w, allow: []string{".vscode", "./.git/hooks/"},
			want: []string{w + "/.git/config", w + "/.idea"},
			not:  []string{w + "/.vscode", w + "/.git/hooks", w + "/.git/modules/sub/hooks"}},
		{name: "linked worktree", workdir: gitfile, gitDir: side, common: main,
			want: []string{gitfile + "/.git", side + "/config.worktree", main + "/config", main + "/hooks", main + "/config.worktree", gitfile + "/.envrc"},
			not:  []string{gitfile + "/.git/config", side + "/hooks", side + "/config"}},
		{name: "submodule", workdir: gitfile, gitDir: sm,
			want: []string{gitfile + "/.git", sm + "/config", sm + "/hooks"}},
		{name: "no repository", workdir: root + "/plain",
			want: []string{root + "/plain/.vscode"},
			not:  []string{root + "/plain/.git", root + "/plain/.git/config"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := paths(For(tc.workdir, tc.gitDir, tc.common, tc.allow))
			for _, p := range tc.want {
				if !slices.Contains(got, p) {
					t.Errorf("%s not protected; got %q", p, got)
				}
			}
			for _, p := range tc.not {
				if slices.Contains(got, p) {
					t.Errorf("%s protected; got %q", p, got)
				}
			}
		})
	}
}

func TestCheckNames(t *testing.T) {
	if err := CheckNames("allow_edit", []string{".git/hooks", "./.vscode", ".claude/commands/"}); err != nil {
		t.Errorf("known names refused: %v", err)
	}
	for _, bad := range []string{".git/objects", "/abs/.vscode", ".claude", "src"} {
		err := CheckNames("--allow-edit", []string{bad})
		if err == nil || !strings.Contains(err.Error(), "--allow-edit[0]: \""+bad+"\" is not a protected path") || !strings.Contains(err.Error(), ".vscode") {
			t.Errorf("CheckNames(%q) = %v", bad, err)
		}
	}
}

func TestCheck(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.vscode/settings.json", root+"/elsewhere/x", w+"/.codex")
	ps := []Path{
		{Path: w + "/.vscode", Name: ".vscode", Dir: true},
		{Path: w + "/.idea", Name: ".idea", Dir: true},
		{Path: root + "/ungranted/.envrc", Name: ".envrc"},
	}
	got, rootOf, err := Check(ps, []string{w})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{w + "/.vscode", w + "/.idea"}; !slices.Equal(paths(got), want) || rootOf[w+"/.idea"] != w {
		t.Errorf("Check = %q, %v; want %q (the ungranted one dropped)", paths(got), rootOf, want)
	}
	// A path explicitly granted writable is the user's choice.
	if got, _, _ := Check(ps[:1], []string{w, w + "/.vscode"}); len(got) != 0 {
		t.Errorf("an explicitly granted path is still protected: %q", paths(got))
	}

	// Symlinks: the path itself, or a directory on its way.
	if err := os.Symlink(root+"/elsewhere", w+"/.claude"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root+"/elsewhere/x", w+"/.envrc"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Path{{Path: w + "/.claude/settings.json", Name: ".claude/settings.json"}, {Path: w + "/.envrc", Name: ".envrc"}} {
		_, _, err := Check([]Path{p}, []string{w})
		if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), "--allow-edit "+p.Name) {
			t.Errorf("Check(%s) = %v, want a symlink refusal naming --allow-edit", p.Path, err)
		}
	}
	// A file where a directory is needed on the way.
	if _, _, err := Check([]Path{{Path: w + "/.codex/x", Name: ".codex"}}, []string{w}); err == nil {
		t.Errorf("a file on the way was accepted")
	}
}

// Hooks git runs from elsewhere: core.hooksPath (husky's .husky/_), and a
// hook that is a symlink to a script in the project; a worktree git dir's
// commondir. Each is protected only as it exists.
func TestForHooksElsewhere(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.git/HEAD", w+"/.git/hooks/", w+"/scripts/pre-commit", w+"/.husky/_/pre-push")
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(w+"/.git/config", "[core]\n\tbare = false\n[Core]\n\thooksPath = .husky/_\n[include]\n\tpath = ../.gitconfig-project\n[includeIf \"onbranch:main\"]\n\tpath = /abs/inc\n")
	mk(t, w+"/.gitconfig-project")
	if err := os.Symlink("../../scripts/pre-commit", w+"/.git/hooks/pre-commit"); err != nil {
		t.Fatal(err)
	}
	got := For(w, "", "", nil)
	for _, want := range []string{w + "/.husky/_", w + "/scripts/pre-commit", w + "/.git/commondir", w + "/.gitconfig-project", "/abs/inc"} {
		if !slices.Contains(paths(got), want) {
			t.Errorf("%s not protected: %q", want, paths(got))
		}
	}
	checked, _, err := Check(got, []string{w})
	if err != nil {
		t.Fatal(err)
	}
	cp := paths(checked)
	if !slices.Contains(cp, w+"/.husky/_") || !slices.Contains(cp, w+"/scripts/pre-commit") || !slices.Contains(cp, w+"/.gitconfig-project") {
		t.Errorf("existing hooks elsewhere dropped by Check: %q", cp)
	}
	if slices.Contains(cp, w+"/.git/commondir") {
		t.Errorf("a missing optional commondir is kept (it would be created, and an empty commondir breaks git): %q", cp)
	}
}

// A protected file with another hard link in the project is refused.
func TestCheckHardLinks(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.envrc", w+"/.git/hooks/post-checkout")
	if err := os.Link(w+"/.envrc", w+"/innocent"); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(w+"/.git/hooks/post-checkout", w+"/hook-copy"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []Path{{Path: w + "/.envrc", Name: ".envrc"}, {Path: w + "/.git/hooks", Name: GitHooks, Dir: true}} {
		if _, _, err := Check([]Path{p}, []string{w}); err == nil || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("Check(%s) = %v, want a hard-link refusal", p.Path, err)
		}
	}
}

// TestReportedNamesDocumented: the README's list of the files reported
// after a run names every one Reported accepts, and Reported accepts
// each listed name (a tool's file added to one is added to the other).
func TestReportedNamesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"*.code-workspace"}
	for n := range reported {
		names = append(names, n)
	}
	for _, n := range names {
		if !strings.Contains(string(readme), "`"+n+"`") && !strings.Contains(string(readme), "`"+n+"/`") {
			t.Errorf("README.md does not name %q among the files reported after a run", n)
		}
		name := strings.TrimPrefix(n, "*")
		if n[0] == '*' {
			name = "app" + name
		}
		if !Reported(name) {
			t.Errorf("Reported(%q) = false for a listed name", name)
		}
	}
	for _, n := range []string{".claude", ".vscode", "main.go", "code-workspace", "pi"} {
		if Reported(n) {
			t.Errorf("Reported(%q) = true", n)
		}
	}
}
