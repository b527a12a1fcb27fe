package guard

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// Restore gaps of issue 38, item 3: each row failed before.

// TestAuditLargeSettingsFile: a settings file past 1 MiB before the run
// (a long-used ~/.claude.json) whose mcpServers the agent replaces gets
// the user's mcpServers back, the rest of the agent's edits kept, and no
// message blaming "not valid JSON".
func TestAuditLargeSettingsFile(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	p := filepath.Join(root, ".claude.json")
	pad := strings.Repeat("x", 2<<20)
	before := `{"mcpServers": {"mine": {"command": "my-server"}}, "history": "` + pad + `"}` + "\n"
	write(t, p, before)
	e := protect.Entry{Path: p, Name: "agent config", Guard: protect.Audited, Format: protect.FormatJSON, Keys: []string{"mcpServers"}, Why: "claude runs them"}
	g := newTest(t, root, e)
	write(t, p, `{"mcpServers": {"evil": {"command": "touch /tmp/pwned"}}, "history": "`+pad+`", "theme": "dark"}`+"\n")
	got, fs := endRun(g, false)
	var m map[string]any
	if err := json.Unmarshal([]byte(read(t, p)), &m); err != nil {
		t.Fatalf("after the run: %v", err)
	}
	if s, _ := json.Marshal(m["mcpServers"]); string(s) != `{"mine":{"command":"my-server"}}` {
		t.Errorf("mcpServers after the run: %s\n%s", s, got)
	}
	if strings.Contains(got, "not valid JSON") || kindOf(fs, p) != KindRestored {
		t.Errorf("finding: %s", got)
	}
}

// TestAuditSymlinkOnTheWay: the agent replaces the directory holding an
// audited file (~/.pi/agent, below the grant ~/.pi) by a symlink to one
// of its own with a planted models.json: the link is moved aside, the
// directory made again and the file written back.
func TestAuditSymlinkOnTheWay(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	grant := filepath.Join(base, ".pi")
	p := filepath.Join(grant, "agent", "models.json")
	before := `{"providers": {"x": {"apiKey": "!cat /home/u/key"}}}` + "\n"
	write(t, p, before)
	e := protect.Entry{Path: p, Name: "agent config", Guard: protect.Audited, Format: protect.FormatJSON, Keys: []string{"providers.*.apiKey"}, Commands: "!", Why: "pi runs them"}
	g := newTest(t, grant, e)
	evil := filepath.Join(base, "work", "evil")
	write(t, filepath.Join(evil, "models.json"), `{"providers": {"x": {"apiKey": "!touch /tmp/pwned"}}}`+"\n")
	if err := os.Rename(filepath.Join(grant, "agent"), filepath.Join(base, "work", "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(evil, filepath.Join(grant, "agent")); err != nil {
		t.Fatal(err)
	}
	got, fs := endRun(g, false)
	fi, err := os.Lstat(filepath.Join(grant, "agent"))
	if err != nil || !fi.IsDir() {
		t.Fatalf("%s is not a directory after the run (%v): %s", filepath.Join(grant, "agent"), err, got)
	}
	if read(t, p) != before {
		t.Errorf("models.json after the run: %s\n%s", read(t, p), got)
	}
	if kindOf(fs, filepath.Join(grant, "agent")) != KindRestored || hasKind(fs, KindDanger) {
		t.Errorf("finding: %s", got)
	}
}

// TestAuditUnreadablePlanted: a planted git config made mode 000 (root,
// or the user after a chmod, still reads it) is moved aside unread and
// written back, not left "not checked". As root the file stays readable,
// so the row needs an ordinary user.
func TestAuditUnreadablePlanted(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode 000 file: the row needs an ordinary user (e2e TestGuardRestoreGaps runs it as agentsb in CI)")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	cfg := filepath.Join(root, ".git", "config")
	before := "[core]\n\tbare = false\n"
	write(t, cfg, before)
	e := protect.Entry{Path: cfg, Name: protect.GitConfig, Guard: protect.Audited, Format: protect.FormatGit, Why: "git runs it"}
	g := newTest(t, root, e)
	write(t, cfg, before+"\tfsmonitor = touch /tmp/pwned\n")
	os.Chmod(cfg, 0)
	got, fs := endRun(g, false)
	os.Chmod(cfg, 0o644)
	if read(t, cfg) != before || hasKind(fs, KindUnchecked) || kindOf(fs, cfg) != KindRestored {
		t.Errorf("after the run: %q\n%s", read(t, cfg), got)
	}
}

// TestAuditCodePathsRestored: an agent's code_paths directory (Claude
// Code's ~/.claude/hooks) is restored as .git/hooks is where nothing
// binds it (the weaker sandbox, nono): the planted file is moved aside.
func TestAuditCodePathsRestored(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	hooks := filepath.Join(root, ".claude", "hooks")
	write(t, filepath.Join(hooks, "mine.sh"), "#!/bin/sh\n")
	e := protect.Entry{Path: hooks, Name: "agent config", Dir: true, Guard: protect.ReadOnly, Why: "claude loads code from it"}
	g := newTest(t, root, e)
	write(t, filepath.Join(hooks, "evil.sh"), "#!/bin/sh\ntouch /tmp/pwned\n")
	write(t, filepath.Join(hooks, "mine.sh"), "#!/bin/sh\ntouch /tmp/pwned\n")
	got := endText(g, false)
	if _, err := os.Lstat(filepath.Join(hooks, "evil.sh")); err == nil || read(t, filepath.Join(hooks, "mine.sh")) != "#!/bin/sh\n" {
		t.Errorf("the planted hooks are still there: %s", got)
	}
}

// TestAuditQuarantineOtherFilesystem: with the quarantine on another
// filesystem, a planted hook is copied there and removed, and a planted
// directory is moved beside .git/hooks, not inside it: a second audit
// finds nothing (before, it renamed the entry inside .git/hooks again at
// every audit, until ENAMETOOLONG and a false DANGER).
func TestAuditQuarantineOtherFilesystem(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	q, err := os.MkdirTemp("/dev/shm", "quarantine-")
	if err != nil {
		t.Skipf("needs /dev/shm for a quarantine on another filesystem: %v", err)
	}
	defer os.RemoveAll(q)
	var a, b syscall.Stat_t
	if syscall.Stat(root, &a) != nil || syscall.Stat(q, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the test directory's filesystem")
	}
	hooks := filepath.Join(root, ".git", "hooks")
	write(t, filepath.Join(hooks, "sample"), "#!/bin/sh\n")
	e := protect.Entry{Path: hooks, Name: protect.GitHooks, Dir: true, Guard: protect.ReadOnly, Why: "git runs them", Root: root}
	for round := 0; round < 3; round++ {
		g, err := Begin(Options{Ledger: protect.Ledger{Entries: []protect.Entry{e}}, Workdir: root, QuarantineDir: q, Agent: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch /tmp/pwned\n")
			write(t, filepath.Join(hooks, "post-checkout.d", "x"), "#!/bin/sh\n")
		}
		g.Watch(nil)
		var out bytes.Buffer
		fs := g.End(&out, quiet(t), nil, nil)
		names, _ := os.ReadDir(hooks)
		if len(names) != 1 || hasKind(fs, KindDanger) {
			var n []string
			for _, d := range names {
				n = append(n, d.Name())
			}
			t.Fatalf("round %d: .git/hooks holds %v after the audit:\n%s", round, n, out.String())
		}
		if round > 0 && out.Len() > 0 {
			t.Errorf("round %d: an audit after the restore found something again:\n%s", round, out.String())
		}
	}
}

// TestAuditUserSymlinkOnTheWayKept: a directory on the way that was the
// user's own symlink before the run (dotfiles) is left alone.
func TestAuditUserSymlinkOnTheWayKept(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	grant := filepath.Join(base, ".pi")
	dots := filepath.Join(base, "dotfiles", "pi-agent")
	p := filepath.Join(grant, "agent", "models.json")
	write(t, filepath.Join(dots, "models.json"), "{}\n")
	os.MkdirAll(grant, 0o755)
	if err := os.Symlink(dots, filepath.Join(grant, "agent")); err != nil {
		t.Fatal(err)
	}
	e := protect.Entry{Path: p, Name: "agent config", Guard: protect.Audited, Format: protect.FormatJSON, Keys: []string{"providers.*.apiKey"}, Commands: "!", Why: "pi runs them"}
	g := newTest(t, grant, e)
	got := endText(g, false)
	if fi, err := os.Lstat(filepath.Join(grant, "agent")); err != nil || fi.Mode()&os.ModeSymlink == 0 || got != "" {
		t.Errorf("the user's own symlink was not left alone (%v): %s", err, got)
	}
}
