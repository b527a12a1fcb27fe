package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGitConfigRefusalNamed (issue 39, item 7): `git config user.name X`
// inside the view fails (the config is read-only: git's rename of
// config.lock over the bind says "Device or resource busy"), and the run
// ends with a line saying it was the sandbox, with the `why` and
// --allow-edit to run; `why --write .git/config` names the protection and
// the fix; with --allow-edit .git/config the same command works and no
// such line is printed.
func TestGitConfigRefusalNamed(t *testing.T) {
	skipWithoutLandlock(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed: apt-get install git (.ci/run does)")
	}
	r := newBrokerRun(t)
	gitRepoCommitted(t, r.work)
	script := `git config user.name Sandboxed && echo CONFIG-WRITTEN; git config user.name; true`
	code, out := r.run(60*time.Second, nil, "--offline", r.folder(), "-c", script)
	if code != 0 || strings.Contains(out, "CONFIG-WRITTEN") || !strings.Contains(out, "Device or resource busy") {
		t.Fatalf("git config inside: want git's refusal (exit 0 from the script), got exit %d: %s", code, out)
	}
	for _, want := range []string{"the sandbox refused a change to .git/config", "`agent-sandbox why --write .git/config`", "`--allow-edit .git/config`"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's end does not say %q:\n%s", want, out)
		}
	}
	code, out = r.run(60*time.Second, nil, "--offline", "why", "--write", ".git/config")
	if code != 1 || !strings.Contains(out, "rule:   protected") || !strings.Contains(out, "--allow-edit .git/config") || !strings.Contains(out, "read-only") {
		t.Errorf("why --write .git/config (exit %d) does not name the protection and --allow-edit:\n%s", code, out)
	}
	code, out = r.run(60*time.Second, nil, "--offline", "--allow-edit", ".git/config", r.folder(), "-c", script)
	if code != 0 || !strings.Contains(out, "CONFIG-WRITTEN") || strings.Contains(out, "the sandbox refused") {
		t.Errorf("with --allow-edit .git/config, git config (exit %d): %s", code, out)
	}
}
