package guard

// Attacks on the JSON restore found by the review of issue 22: each
// failed on the reviewed code (6a42b25).

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// TestRestoreDuplicateKeys: restoreJSON patches the first member of a
// duplicated name; JSON.parse (Claude Code) keeps the last. The audit
// checks what it restored the way the tool reads it, and falls back to
// the whole file from before: the result runs no code the base did not.
func TestRestoreDuplicateKeys(t *testing.T) {
	e := protect.Entry{Name: "agent config", Guard: protect.Audited, Format: protect.FormatJSON, Keys: []string{"hooks", "apiKeyHelper", "projects.*.mcpServers"}}
	base := `{"theme": "dark", "projects": {"/p": {}}}`
	for _, cur := range []string{
		`{"theme": "dark", "apiKeyHelper": "x", "apiKeyHelper": "touch /tmp/PWNED"}`,
		`{"theme": "dark", "projects": {"/p": {}, "/\u0070": {"mcpServers": {"e": {"command": "x"}}}}}`,
	} {
		root, _ := filepath.EvalSymlinks(t.TempDir())
		e.Path = filepath.Join(root, "home", ".claude.json")
		write(t, e.Path, base)
		g := newTest(t, root, e)
		write(t, e.Path, cur)
		found := endText(g, true)
		out := []byte(read(t, e.Path))
		var last map[string]any // JSON.parse's reading: the last duplicate wins
		json.Unmarshal(out, &last)
		bk, _ := protect.CodeKeys(e, []byte(base))
		if ak, _ := protect.CodeKeys(e, out); !equalKeys(bk, ak) || last["apiKeyHelper"] != nil {
			t.Errorf("the audit of %s left %s, which still runs %v (%s)", cur, out, ak, found)
		}
	}
}

// TestAuditManyChangedKeys: a change to many code-running keys (1,000
// projects given MCP servers) is undone by restoring the whole accepted
// file, not key by key (a pass over the document per key: hours at 1 MiB).
func TestAuditManyChangedKeys(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	p := filepath.Join(root, "home", ".claude.json")
	write(t, p, "{}\n")
	var b strings.Builder
	b.WriteString(`{"projects": {`)
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"/p%d": {"mcpServers": {"e": {"command": "x"}}}`, i)
	}
	b.WriteString(`}}`)
	g := newTest(t, root, protect.Entry{Path: p, Name: "agent config", Guard: protect.Audited, Format: protect.FormatJSON, Keys: []string{"mcpServers", "projects.*.mcpServers"}})
	write(t, p, b.String())
	got, fs := endRun(g, true)
	if read(t, p) != "{}\n" {
		t.Errorf("not restored whole: %.200s", read(t, p))
	}
	if kindOf(fs, p) != KindRestored {
		t.Errorf("findings: %s", got)
	}
}

// TestKeepBounded: an agent rewriting a file in a loop makes the guard
// keep a version per restore; the versions of one path a run keeps are
// bounded (the latest replaces the last slot).
func TestKeepBounded(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	p := filepath.Join(root, "w", ".envrc")
	write(t, p, "x\n")
	g := newTest(t, root, protect.Entry{Path: p, Name: ".envrc", Guard: protect.ReadOnly})
	var last string
	for i := 0; i < 3*maxCopies; i++ {
		kept, err := g.keep(p, "changed", []byte(fmt.Sprintf("version %d\n", i)))
		if err != nil {
			t.Fatal(err)
		}
		last = kept
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(last), ".envrc.changed*"))
	if len(matches) > maxCopies+1 {
		t.Errorf("%d versions kept of one path", len(matches))
	}
	if got := read(t, last); got != fmt.Sprintf("version %d\n", 3*maxCopies-1) {
		t.Errorf("the latest version is not the one kept last: %q", got)
	}
}
