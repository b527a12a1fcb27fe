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

	// A file where a directory is needed on the way.
	mk(t, w+"/.claude")
	if l := build(w, "", "", nil); !strings.Contains(l.Problem, "is not a directory") {
		t.Errorf("a file on the way: Problem = %q", l.Problem)
	}
}

// TestCheckSymlinks: protected names that are symlinks the user made
// (issue 39, item 6), the path itself or a directory on its way: every link
// a writable grant holds is an entry of its own (kept as it is; one no
// writable grant holds is not: the agent cannot repoint it); where the
// path leads is protected when a writable grant holds it, and needs
// nothing elsewhere; a cycle refuses the run.
func TestCheckSymlinks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		links  [][2]string // link (relative to the root) -> target (@ is the root)
		allow  []string
		kept   []string // link entries (relative to the root)
		want   []string // other entries that must be there
		absent []string // paths that must not be entries
		cycle  bool
	}{
		{name: "dir-out-of-grants", links: [][2]string{{"w/.claude", "@/elsewhere"}},
			kept: []string{"w/.claude"}, absent: []string{"elsewhere/settings.json", "w/.claude/settings.json"}},
		{name: "dir-in-workdir", links: [][2]string{{"w/.claude", "shared-claude"}},
			kept: []string{"w/.claude"}, want: []string{"w/shared-claude/settings.json", "w/shared-claude/commands"}},
		{name: "chain", links: [][2]string{{"w/.claude", "hop"}, {"w/hop", "@/elsewhere/hop2"}, {"elsewhere/hop2", "@/w/shared-claude"}},
			kept: []string{"w/.claude", "w/hop"}, want: []string{"w/shared-claude/settings.json"}, absent: []string{"elsewhere/hop2"}},
		{name: "cycle", links: [][2]string{{"w/.claude", ".c2"}, {"w/.c2", ".claude"}}, cycle: true},
		{name: "file-out-of-grants", links: [][2]string{{"w/.envrc", "@/elsewhere/x"}},
			kept: []string{"w/.envrc"}, absent: []string{"elsewhere/x"}},
		{name: "file-in-workdir", links: [][2]string{{"w/.envrc", "envrc.real"}},
			kept: []string{"w/.envrc"}, want: []string{"w/envrc.real"}},
		{name: "allowed", links: [][2]string{{"w/.envrc", "envrc.real"}}, allow: []string{".envrc"},
			absent: []string{"w/.envrc", "w/envrc.real"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSymlinkCase(t, tc.links, tc.allow, tc.kept, tc.want, tc.absent, tc.cycle) })
	}
}

// checkSymlinkCase builds the ledger of a workdir w (below a fresh root,
// with root/elsewhere out of every grant) holding links, and checks it.
func checkSymlinkCase(t *testing.T, links [][2]string, allow, kept, want, absent []string, cycle bool) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	mk(t, w+"/shared-claude/", root+"/elsewhere/")
	for _, l := range links {
		if err := os.Symlink(strings.ReplaceAll(l[1], "@", root), filepath.Join(root, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	l := build(w, "", "", allow)
	if cycle {
		if !strings.Contains(l.Problem, "cycle of symlinks") || !strings.Contains(l.Problem, "--allow-edit .claude/") {
			t.Errorf("Problem = %q, want a cycle refusal naming --allow-edit", l.Problem)
		}
		return
	}
	if l.Problem != "" {
		t.Fatalf("refused: %s", l.Problem)
	}
	for _, k := range kept {
		if e, ok := entry(l, filepath.Join(root, k)); !ok || e.Link == "" || e.Guard != ReadOnly {
			t.Errorf("the link %s is not kept: %+v %v", k, e, ok)
		}
	}
	for _, p := range want {
		if e, ok := entry(l, filepath.Join(root, p)); !ok || e.Link != "" || e.Guard != ReadOnly {
			t.Errorf("where the link leads, %s is not protected: %+v %v %q", p, e, ok, paths(l))
		}
	}
	for _, p := range absent {
		if slices.Contains(paths(l), filepath.Join(root, p)) {
			t.Errorf("%s is an entry: %q", p, paths(l))
		}
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
