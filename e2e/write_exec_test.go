package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteGrantExec (issue 23 item 12): under the built-in engine a
// read-write grant is executable whether it names a file or a directory
// (`--write tool.sh` runs the tool as `--write dir` runs dir/tool.sh), and
// a read-only grant is not, file or directory. `why --exec` says the
// same. The grants lie in the caller's home, outside /tmp and /var/tmp:
// in the view everything below the private /tmp and /var/tmp is
// executable, which would hide the difference.
func TestWriteGrantExec(t *testing.T) {
	skipWithoutLandlock(t)
	// The grants lie in the caller's home, outside /tmp and /var/tmp.
	root := homeTempDir(t, ".agent-sandbox-e2e-")
	bin := buildAgentSandbox(t)
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	script := func(p, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho RAN-"+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rows := []struct {
		name, path, flag, key string
		exec                  bool
	}{
		{"written-file", filepath.Join(root, "tool.sh"), "--write", "allow", true},
		{"written-dir", filepath.Join(root, "wdir", "tool.sh"), "--write", "allow", true},
		{"read-file", filepath.Join(root, "ro.sh"), "--read", "read", false},
		{"read-dir", filepath.Join(root, "rdir", "tool.sh"), "--read", "read", false},
	}
	var flags, probe []string
	folderGrants := map[string][]string{}
	for _, r := range rows {
		script(r.path, r.name)
		grant := r.path
		if strings.HasSuffix(r.name, "-dir") {
			grant = filepath.Dir(r.path)
		}
		flags = append(flags, r.flag, grant)
		folderGrants[r.key] = append(folderGrants[r.key], fmt.Sprintf("%q", grant))
		probe = append(probe, fmt.Sprintf("%s 2>/dev/null || echo DENIED-%s", r.path, r.name))
	}
	cmd := strings.Join(probe, "; ")
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = work
		c.Env = withCover([]string{"HOME=" + home, "PATH=" + agentPath(), "LANG=C.UTF-8", "SHELL=/bin/sh"})
		out, err := c.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return string(out)
	}
	// The control: unsandboxed, every script runs.
	out := run(append([]string{"--no-sandbox", "run", "--"}, "/bin/sh", "-c", cmd)...)
	for _, r := range rows {
		if !strings.Contains(out, "RAN-"+r.name) {
			t.Fatalf("control: %s did not run unsandboxed: %s", r.path, out)
		}
	}
	// Per-run grants.
	out = run(append(append([]string{"-q", "--sandbox-backend", "landlock"}, flags...), "run", "--", "/bin/sh", "-c", cmd)...)
	for _, r := range rows {
		if ran := strings.Contains(out, "RAN-"+r.name); ran != r.exec {
			t.Errorf("%s %s: executed=%v, want %v:\n%s", r.flag, r.name, ran, r.exec, out)
		}
	}
	// The same grants in a folder, and why --exec agrees with the run.
	folder := filepath.Join(root, "agents", "granted")
	if err := os.MkdirAll(filepath.Join(folder, "sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "agent.toml"), []byte("command = \"/bin/sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"network": {"block": true}, "filesystem": {"allow": [%s], "read": [%s]}}`,
		strings.Join(folderGrants["allow"], ", "), strings.Join(folderGrants["read"], ", "))
	if err := os.WriteFile(filepath.Join(folder, "sandbox", "nono.json"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	out = run("-q", "--sandbox-backend", "landlock", folder, "-c", cmd)
	for _, r := range rows {
		ran := strings.Contains(out, "RAN-"+r.name)
		if ran != r.exec {
			t.Errorf("filesystem.%s %s: executed=%v, want %v:\n%s", r.key, r.name, ran, r.exec, out)
		}
		c := exec.Command(bin, "why", "--sandbox-backend", "landlock", "--exec", r.path, folder)
		c.Dir = work
		c.Env = withCover([]string{"HOME=" + home, "PATH=" + agentPath(), "LANG=C.UTF-8"})
		wo, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 0 && code != 1 {
			t.Errorf("why --exec %s: exit %d: %s", r.path, code, wo)
		} else if allowed := code == 0; allowed != ran {
			t.Errorf("why --exec %s says allowed=%v, but the run executed=%v:\n%s", r.path, allowed, ran, wo)
		}
	}
}
