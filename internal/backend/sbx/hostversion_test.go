package sbx

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// TestHostVersionNotInWritable (issue 10 item 8): the host-side version
// command is not executed when its program lies where the agent can write
// (a planted .venv/bin/claude); outside, it runs.
func TestHostVersionNotInWritable(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	work := filepath.Join(root, "work")
	canary := filepath.Join(root, "ran")
	prog := filepath.Join(work, ".venv", "bin", "claude")
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ntouch "+canary+"\necho 1.2.3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := runner{stdio: launch.Stdio{Err: io.Discard}}
	_, err := r.hostVersion([]string{prog, "--version"}, []string{work})
	if err == nil || !strings.Contains(err.Error(), "not executed") {
		t.Errorf("hostVersion of a program inside the workdir: %v", err)
	}
	if _, err := os.Stat(canary); err == nil {
		t.Fatalf("the planted program ran")
	}
	v, err := r.hostVersion([]string{prog, "--version"}, []string{filepath.Join(root, "elsewhere")})
	if err != nil || v != "1.2.3" {
		t.Errorf("neighbour: hostVersion = %q, %v", v, err)
	}
}
