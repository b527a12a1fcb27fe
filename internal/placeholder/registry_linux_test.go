//go:build linux

package placeholder

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestRegistry: a run of another engine sees a placeholder the view made
// as one while it is as made (Is, Paths), not once it changed or is gone,
// and sees one being made (its pending record) even empty before its
// content is written.
func TestRegistry(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	w := filepath.Join(root, "w")
	os.MkdirAll(w, 0o755)
	s := tspec{Workdir: w, Allow: []string{w}, StateDir: filepath.Join(root, "state", "agents", "x"),
		Protected: []pp{{Path: w + "/.envrc"}, {Path: w + "/.mcp.json"}, {Path: w + "/.vscode", Dir: true}}}
	var warn bytes.Buffer
	rel := mustProtect(t, s, &warn)
	reg := Registry{StateRoot: filepath.Join(root, "state")}
	for _, p := range []string{w + "/.envrc", w + "/.mcp.json", w + "/.vscode"} {
		if !reg.Is(p) {
			t.Errorf("%s, a placeholder as made, is not one", p)
		}
	}
	if len(reg.Paths()) != 3 {
		t.Errorf("Paths: %v", reg.Paths())
	}
	os.WriteFile(w+"/.mcp.json", []byte(`{"mcpServers": {}}`), 0o644)
	if reg.Is(w + "/.mcp.json") {
		t.Errorf("a placeholder the agent wrote is still taken for one")
	}
	os.WriteFile(w+"/.mcp.json", []byte("{}\n"), 0o644)
	rel()
	if reg.Is(w + "/.envrc") {
		t.Errorf("a removed placeholder is still one")
	}
	// Being made: the pending record, the file still empty.
	pending := filepath.Join(w, "commondir")
	b, _ := json.Marshal(record{Path: pending, Content: ".\n", Pending: true})
	os.WriteFile(filepath.Join(root, "state", "protect", "other.placeholders"), append(b, '\n'), 0o600)
	os.WriteFile(pending, nil, 0o644)
	if !reg.Is(pending) {
		t.Errorf("a placeholder being made (pending, empty) is not one")
	}
	os.WriteFile(pending, []byte("../evil\n"), 0o644)
	if reg.Is(pending) {
		t.Errorf("a pending record makes any content a placeholder")
	}
}
