//go:build linux

package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNewRulesKeepWhatWasKept: a pattern added since the last checkpoint
// (`*/` in .git/info/exclude) that would leave out a directory that
// checkpoint kept is not applied by the next run's checkpoint, and said;
// one that leaves out nothing kept applies.
func TestNewRulesKeepWhatWasKept(t *testing.T) {
	root, w := tree(t)
	must(t, os.MkdirAll(filepath.Join(w, ".git", "info"), 0o755))
	a, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Command: "one", Mode: ModeOn})
	must(t, err)
	a.End(0)
	must(t, os.WriteFile(filepath.Join(w, ".git", "info", "exclude"), []byte("*/\nnew-only/\n"), 0o644))
	var warn bytes.Buffer
	b, err := Begin(BeginOptions{StateRoot: root, Workdir: w, Command: "two", Mode: ModeOn, Warn: &warn})
	must(t, err)
	defer b.End(0)
	if slices.Contains(b.before.Rules, "*/") || !slices.Contains(b.before.Rules, "new-only/") {
		t.Errorf("rules applied: %q", b.before.Rules)
	}
	if !strings.Contains(warn.String(), "the ignore pattern */") || strings.Contains(warn.String(), "new-only") {
		t.Errorf("warnings: %s", warn.String())
	}
	for _, k := range b.before.Skipped {
		if k.Why == "ignored directory" && k.Path != "node_modules" {
			t.Errorf("left out: %v", k)
		}
	}
}

// TestMaxRules: the patterns after the first MaxRules are not applied.
func TestMaxRules(t *testing.T) {
	var lines []string
	for i := 0; i < MaxRules+10; i++ {
		lines = append(lines, fmt.Sprintf("p%d", i), "", "# c")
	}
	rs := parseRules(lines)
	if len(rs) != MaxRules || rs.ignored(fmt.Sprintf("p%d", MaxRules+5), false) || !rs.ignored("p3", false) {
		t.Errorf("%d rules", len(rs))
	}
}

// BenchmarkBeginChecks is what the red-team fixes add to every run's
// checkpoint before it, on a store of a 10,000-file tree: the modes of
// the store put back (ten lstats; with its 256 fan-out directories, done
// after the run and by undo) and the ignore rules read and compared with
// the ones applied last (unchanged: no manifest is read).
func BenchmarkBeginChecks(b *testing.B) {
	dir := benchTree(b, 10000)
	root := b.TempDir()
	s, err := Open(root, dir, Settings{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := s.Take(s.beforeBase("", io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("repairModes", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			repairModes(root, s.Dir, false)
		}
	})
	b.Run("repairModes-fanout", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			repairModes(root, s.Dir, true)
		}
	})
	b.Run("beforeBase", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.beforeBase(m.ID, io.Discard)
		}
	})
}
