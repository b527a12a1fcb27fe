//go:build linux

package placeholder

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkMakeRelease: the placeholders of an ordinary run in a fresh git
// repository (the twelve missing entries `--dry-run` lists there: the git
// dir's config.worktree and commondir, the editors' and agents' settings,
// .envrc, .gitmodules, .mcp.json), made before the run and removed after,
// as one run alone in its workdir does.
func BenchmarkMakeRelease(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	w := filepath.Join(root, "w")
	if err := os.MkdirAll(w, 0o755); err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", w).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{
			{Path: w + "/.git/config.worktree"}, {Path: w + "/.git/commondir"},
			{Path: w + "/.vscode", Dir: true}, {Path: w + "/.idea", Dir: true}, {Path: w + "/.codex", Dir: true},
			{Path: w + "/.claude/settings.json"}, {Path: w + "/.claude/settings.local.json"},
			{Path: w + "/.claude/commands", Dir: true}, {Path: w + "/.claude/agents", Dir: true},
			{Path: w + "/.mcp.json"}, {Path: w + "/.gitmodules"}, {Path: w + "/.envrc"},
		}}
	for b.Loop() {
		rel, err := ensureProtected(s, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		if left := rel(); len(left) != 0 {
			b.Fatalf("placeholders left: %v", left)
		}
	}
}
