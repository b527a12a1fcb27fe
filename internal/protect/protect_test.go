package protect

import (
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

func paths(l Ledger) []string {
	var out []string
	for _, p := range l.Entries {
		out = append(out, p.Path)
	}
	return out
}

// entry returns the ledger's entry at path.
func entry(l Ledger, path string) (Entry, bool) {
	for _, e := range l.Entries {
		if e.Path == path {
			return e, true
		}
	}
	return Entry{}, false
}

// build is Build for a workdir that is the only writable path (plus
// extra).
func build(workdir, gitDir, common string, allow []string, extra ...string) Ledger {
	return Build(Input{Workdir: workdir, GitDir: gitDir, CommonDir: common, AllowEdit: allow,
		Writable: append([]string{workdir}, extra...), Home: "/nonexistent-home"})
}

func TestBuild(t *testing.T) {
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
			got := paths(build(tc.workdir, tc.gitDir, tc.common, tc.allow, filepath.Join(root, "main"), filepath.Join(root, "super")))
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
	l := build(w, "", "", nil)
	if l.Problem != "" {
		t.Fatal(l.Problem)
	}
	if e, ok := entry(l, w+"/.idea"); !ok || e.Root != w || !e.Missing || e.Guard != ReadOnly {
		t.Errorf(".idea: %+v %v", e, ok)
	}
	if e, ok := entry(l, w+"/.vscode"); !ok || e.Missing {
		t.Errorf(".vscode: %+v %v", e, ok)
	}
	// What no writable path holds is left out, and so is a path granted
	// writable by name (the user's choice).
	if got := Build(Input{Workdir: w, Writable: []string{w, w + "/.vscode"}}); slices.Contains(paths(got), w+"/.vscode") {
		t.Errorf("an explicitly granted path is still protected: %q", paths(got))
	}
	if got := Build(Input{Workdir: w, Writable: []string{root + "/elsewhere"}}); len(got.Entries) != 0 {
		t.Errorf("entries no writable path holds: %q", paths(got))
	}

	// Symlinks the user made (issue 39, item 6), the path itself or a
	// directory on its way: the link is an entry of its own (kept as it
	// is); where it leads is protected when a writable grant holds it,
	// and needs nothing elsewhere; a cycle refuses the run.
	if err := os.Symlink(root+"/elsewhere", w+"/.claude"); err != nil {
		t.Fatal(err)
	}
	l = build(w, "", "", nil)
	if l.Problem != "" {
		t.Errorf("a .claude symlink out of the grants refuses the run: %q", l.Problem)
	}
	if e, ok := entry(l, w+"/.claude"); !ok || e.Link != root+"/elsewhere" || e.Guard != ReadOnly || e.Root != w {
		t.Errorf("the .claude link is not kept: %+v %v", e, ok)
	}
	for _, p := range paths(l) {
		if strings.HasPrefix(p, root+"/elsewhere") || strings.HasPrefix(p, w+"/.claude/") {
			t.Errorf("an entry through the link, or where no writable grant reaches: %s", p)
		}
	}
	os.Remove(w + "/.claude")
	mk(t, w+"/shared-claude/")
	if err := os.Symlink("shared-claude", w+"/.claude"); err != nil {
		t.Fatal(err)
	}
	l = build(w, "", "", nil)
	if e, ok := entry(l, w+"/shared-claude/settings.json"); l.Problem != "" || !ok || !e.Missing || e.Name != ".claude/settings.json" || e.Link != "" {
		t.Errorf("a .claude link inside the workdir: its target's settings are not protected: %+v %v %q", e, ok, l.Problem)
	}
	// A chain: every link a writable grant holds is kept (the agent could
	// repoint any of them), one outside every writable grant is not, and
	// the end of the chain is protected where a writable grant holds it.
	os.Remove(w + "/.claude")
	if err := os.Symlink("hop", w+"/.claude"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root+"/elsewhere/hop2", w+"/hop"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(w+"/shared-claude", root+"/elsewhere/hop2"); err != nil {
		t.Fatal(err)
	}
	l = build(w, "", "", nil)
	if l.Problem != "" {
		t.Fatal(l.Problem)
	}
	for _, p := range []string{w + "/.claude", w + "/hop"} {
		if e, ok := entry(l, p); !ok || e.Link == "" {
			t.Errorf("a link of the chain in the workdir is not kept: %s %+v %v", p, e, ok)
		}
	}
	if _, ok := entry(l, root+"/elsewhere/hop2"); ok {
		t.Errorf("a link no writable grant holds is an entry")
	}
	if _, ok := entry(l, w+"/shared-claude/settings.json"); !ok {
		t.Errorf("the end of the chain is not protected: %q", paths(l))
	}
	for _, p := range []string{w + "/.claude", w + "/hop", root + "/elsewhere/hop2"} {
		os.Remove(p)
	}
	if err := os.Symlink(".c2", w+"/.claude"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".claude", w+"/.c2"); err != nil {
		t.Fatal(err)
	}
	if l := build(w, "", "", nil); !strings.Contains(l.Problem, "cycle of symlinks") || !strings.Contains(l.Problem, "--allow-edit .claude/") {
		t.Errorf("Problem = %q, want a cycle refusal naming --allow-edit", l.Problem)
	}
	os.Remove(w + "/.claude")
	os.Remove(w + "/.c2")
	if err := os.Symlink(root+"/elsewhere/x", w+"/.envrc"); err != nil {
		t.Fatal(err)
	}
	if l := build(w, "", "", nil); l.Problem != "" || slices.Contains(paths(l), root+"/elsewhere/x") {
		t.Errorf(".envrc to a file out of the grants: %q %q", l.Problem, paths(l))
	}
	if l := build(w, "", "", []string{".envrc"}); slices.Contains(paths(l), w+"/.envrc") {
		t.Errorf("an allowed name is still kept: %q", paths(l))
	}
	os.Remove(w + "/.envrc")
	if err := os.Symlink("envrc.real", w+"/.envrc"); err != nil {
		t.Fatal(err)
	}
	l = build(w, "", "", nil)
	if e, ok := entry(l, w+"/envrc.real"); l.Problem != "" || !ok || e.Guard != ReadOnly || !e.Missing {
		t.Errorf(".envrc to a file in the workdir: its target is not protected: %+v %v %q", e, ok, l.Problem)
	}
	if e, ok := entry(l, w+"/.envrc"); !ok || e.Link != "envrc.real" {
		t.Errorf("the .envrc link is not kept: %+v %v", e, ok)
	}
	os.Remove(w + "/.envrc")
	// A file where a directory is needed on the way.
	mk(t, w+"/.claude")
	if l := build(w, "", "", nil); !strings.Contains(l.Problem, "is not a directory") {
		t.Errorf("a file on the way: Problem = %q", l.Problem)
	}
}

// Hooks and configuration git uses from elsewhere: core.hooksPath
// (husky's .husky/_), a hook that is a symlink to a script in the
// project, included configuration (relative to the including file) and
// a worktree git dir's commondir. Each is in the ledger whether it exists
// or not: a missing hooks directory or include is read-only (created
// empty), a missing commondir or hook target must stay missing. git's own
// grammar decides what the configuration says: a key on the header's
// line, an inline comment, the section's case.
func TestBuildHooksElsewhere(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.git/HEAD", w+"/.git/hooks/", w+"/scripts/pre-commit")
	write := func(p, body string) {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(w+"/.git/config", "[core]\n\tbare = false\n[Core] hooksPath = .husky/_ ; husky\n[include]\n\tpath = ../.gitconfig-project\n[includeIf \"onbranch:main\"]\n\tpath = /abs/inc\n")
	mk(t, w+"/.gitconfig-project")
	write(w+"/.gitconfig-project", "[include]\n\tpath = nested.inc\n")
	if err := os.Symlink("../../scripts/pre-commit", w+"/.git/hooks/pre-commit"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../scripts/missing", w+"/.git/hooks/pre-push"); err != nil {
		t.Fatal(err)
	}
	l := build(w, "", "", nil)
	for _, c := range []struct {
		path    string
		guard   Guard
		missing bool
	}{
		{w + "/.husky/_", ReadOnly, true},
		{w + "/scripts/pre-commit", ReadOnly, false},
		{w + "/scripts/missing", ReadOnly, true},
		{w + "/.git/commondir", ReadOnly, true},
		{w + "/.gitconfig-project", ReadOnly, false},
		{w + "/nested.inc", ReadOnly, true},
	} {
		e, ok := entry(l, c.path)
		if !ok || e.Guard != c.guard || e.Missing != c.missing {
			t.Errorf("%s: %+v (in the ledger: %v), want guard %s, missing %v", c.path, e, ok, c.guard, c.missing)
		}
	}
	if _, ok := entry(l, "/abs/inc"); ok {
		t.Errorf("an include outside every writable path is in the ledger")
	}
	if l.Problem != "" {
		t.Errorf("Problem: %s", l.Problem)
	}
}

// The user's own git configuration: a relative core.hooksPath there is
// the project's, and an include it names inside a writable path counts.
func TestBuildUserGitConfig(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w, home := filepath.Join(root, "w"), filepath.Join(root, "home")
	mk(t, w+"/.git/HEAD", home+"/.gitconfig", home+"/.config/")
	if err := os.WriteFile(home+"/.gitconfig", []byte("[core]\n\thooksPath = githooks\n[include]\n\tpath = ~/.config/agent/git.inc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	configs := UserGitConfigs(home, func(k string) string {
		if k == "GIT_CONFIG_NOSYSTEM" {
			return "1"
		}
		return ""
	})
	if !slices.Equal(configs, []string{home + "/.gitconfig"}) {
		t.Fatalf("UserGitConfigs = %q", configs)
	}
	l := Build(Input{Workdir: w, Writable: []string{w, home + "/.config/agent"}, Home: home, UserGitConfig: configs})
	for _, p := range []string{w + "/githooks", home + "/.config/agent/git.inc"} {
		if _, ok := entry(l, p); !ok {
			t.Errorf("%s not in the ledger: %q", p, paths(l))
		}
	}
}

// What code-running settings run by path is code too: a hook command in
// the agent's settings naming a script, core.fsmonitor naming one in the
// project.
func TestBuildCommandFiles(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w, home := filepath.Join(root, "w"), filepath.Join(root, "home")
	mk(t, w+"/.git/HEAD", w+"/tools/fsmon.sh", home+"/.claude/hooks/guard.py")
	if err := os.WriteFile(w+"/.git/config", []byte("[core]\n\tfsmonitor = ./tools/fsmon.sh\n[alias]\n\tlg = log --format=%h/%s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings := home + "/.claude/settings.json"
	if err := os.WriteFile(settings, []byte(`{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "python3 $HOME/.claude/hooks/guard.py --strict"}, {"type": "command", "command": "~/.claude/hooks/absent.sh"}]}]}, "theme": "/not/code"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Build(Input{Workdir: w, Writable: []string{w, home + "/.claude"}, Home: home,
		AgentKeys: []KeyFile{{Path: settings, Keys: []string{"hooks"}}}})
	for _, c := range []struct {
		path  string
		guard Guard
	}{
		{w + "/tools/fsmon.sh", ReadOnly},
		{home + "/.claude/hooks/guard.py", ReadOnly},
		{home + "/.claude/hooks/absent.sh", ReadOnly},
		{settings, Audited},
	} {
		if e, ok := entry(l, c.path); !ok || e.Guard != c.guard {
			t.Errorf("%s: %+v, %v; want %s", c.path, e, ok, c.guard)
		}
	}
	for _, p := range paths(l) {
		if strings.Contains(p, "%") || strings.Contains(p, "/not/code") {
			t.Errorf("not a file a command runs: %s", p)
		}
	}
}

// A protected file with another hard link in the project is refused.
func TestCheckHardLinks(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/.envrc", w+"/.git/hooks/post-checkout", w+"/.git/HEAD")
	if err := os.Link(w+"/.envrc", w+"/innocent"); err != nil {
		t.Fatal(err)
	}
	if l := build(w, "", "", nil); !strings.Contains(l.Problem, "hard links") || !strings.Contains(l.Problem, ".envrc") {
		t.Errorf("Problem = %q, want a hard-link refusal of .envrc", l.Problem)
	}
	os.Remove(w + "/innocent")
	if err := os.Link(w+"/.git/hooks/post-checkout", w+"/hook-copy"); err != nil {
		t.Fatal(err)
	}
	if l := build(w, "", "", nil); !strings.Contains(l.Problem, "hard links") || !strings.Contains(l.Problem, "post-checkout") {
		t.Errorf("Problem = %q, want a hard-link refusal of the hook", l.Problem)
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
