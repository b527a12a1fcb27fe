package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeClaims (issue 23 item 10): what the README says a sandboxed
// shell shows is what it shows. The README's own words are read (the
// quick start under "In that shell", and the errors of a write to a
// protected file and of git on a protected config), and each claim is
// checked against the real shell under the built-in engine: change the
// README or the engine, and this test says which no longer holds. (The
// README used to show "Read-only file system" for git, whose error is
// "Device or resource busy".)
func TestReadmeClaims(t *testing.T) {
	skipWithoutLandlock(t)
	for _, tool := range []string{"git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: apt-get install %s (.ci/run does)", tool, tool)
		}
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatalf("the README is read from the checkout (run this test from e2e/): %v", err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ")
	claims := []string{
		"In that shell `touch ~/x` fails (read-only file system), `ls ~` and `ls ..` list only what the sandbox grants (no `.ssh`), `cat ~/.ssh/id_ed25519` finds no such file (what is not granted does not exist inside) and `curl example.com` resolves nothing (offline)",
		"`agent-sandbox why ~/.ssh/id_ed25519` says why (DENIED, a credential path, never granted)",
	}
	for _, c := range claims {
		if !strings.Contains(readme, c) {
			t.Errorf("the README no longer says %q: change this test with it", c)
		}
	}
	m := regexp.MustCompile(`writes to read-only entries fail with "([^"]+)" \(git's own error on a protected config is "([^"]+)"`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal(`the README no longer names the errors of a write to a protected file and of git ("writes to read-only entries fail with ... (git's own error on a protected config is ..."): change this test with it`)
	}
	roErr, gitErr := m[1], m[2]

	// In the caller's home, outside /tmp and /var/tmp, whose private
	// tmpfs in the view would make ~ writable.
	root := homeTempDir(t, ".agent-sandbox-e2e-")
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "SECRET-SSH-KEY\n")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", work).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	bin := buildAgentSandbox(t)
	run := func(args ...string) (string, int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = work
		c.Env = withCover([]string{"HOME=" + home, "PATH=" + agentPath(), "LANG=C.UTF-8", "SHELL=/bin/sh"})
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	script := `touch ~/x; echo "HOME-LIST: $(ls -A ~ | tr '\n' ' ')"; echo "PARENT-LIST: $(ls -A .. | tr '\n' ' ')"; cat ~/.ssh/id_ed25519; git config x.y z; echo x >> .git/config; true`
	// The control: unsandboxed, each of them works.
	out, _ := run("--no-sandbox", "shell", "-c", script)
	if !strings.Contains(out, "SECRET-SSH-KEY") {
		t.Fatalf("control: unsandboxed the key was not read: %s", out)
	}
	os.Remove(filepath.Join(home, "x"))
	out, _ = run("-q", "--sandbox-backend", "landlock", "shell", "-c", script+"; curl -sS --max-time 5 http://example.com/ >/dev/null")
	for what, want := range map[string]string{
		"touch ~/x fails (read-only file system)":        "touch: cannot touch '" + home + "/x': " + roErr,
		"cat ~/.ssh/id_ed25519 finds no such file":       home + "/.ssh/id_ed25519: No such file or directory",
		"curl example.com resolves nothing":              "Could not resolve host: example.com",
		"git's own error on a protected config":          "/.git/config: " + gitErr,
		"writes to read-only entries fail with " + roErr: ".git/config: " + roErr,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the README says %s, but the shell does not print %q:\n%s", what, want, out)
		}
	}
	if strings.Contains(out, "SECRET-SSH-KEY") {
		t.Errorf("the key was read inside: %s", out)
	}
	// ls ~ and ls .. list only what is granted: no .ssh, and not the
	// sibling the test makes beside the workdir.
	write(t, filepath.Join(root, "sibling", "f"), "x\n")
	out, _ = run("-q", "--sandbox-backend", "landlock", "shell", "-c", script)
	for _, line := range strings.Split(out, "\n") {
		if (strings.HasPrefix(line, "HOME-LIST:") || strings.HasPrefix(line, "PARENT-LIST:")) && (strings.Contains(line, ".ssh") || strings.Contains(line, "sibling")) {
			t.Errorf("the README says ls ~ and ls .. list only what is granted, but: %s", line)
		}
	}
	if !strings.Contains(out, "PARENT-LIST: ") || !strings.Contains(out, "work") {
		t.Errorf("ls .. lists nothing (the workdir is granted): %s", out)
	}
	if _, err := os.Stat(filepath.Join(home, "x")); err == nil {
		t.Errorf("~/x was created")
	}
	out, code := run("why", "--sandbox-backend", "landlock", filepath.Join(home, ".ssh", "id_ed25519"))
	if code != 1 || !strings.HasPrefix(out, "DENIED") || !strings.Contains(out, "rule:   credential") || !strings.Contains(out, "never granted") {
		t.Errorf("why ~/.ssh/id_ed25519: exit %d, want DENIED, a credential path, never granted:\n%s", code, out)
	}
}
