package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFilesDanglingPolicy: a sandbox file that exists as a name but cannot
// be read is an error for `agents show`/`copy`, never left out.
func TestFilesDanglingPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dangling")
	if err := os.MkdirAll(filepath.Join(dir, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.toml"), []byte("command = \"/bin/sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing.json", filepath.Join(dir, "sandbox", "nono.json")); err != nil {
		t.Fatal(err)
	}
	f := &Folder{ID: "dangling", Dir: dir}
	if _, err := f.Files(); err == nil || !strings.Contains(err.Error(), "nono.json") {
		t.Fatalf("Files() = %v, want an error naming nono.json", err)
	}
}
