package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNestedUsernsOptIn (issue 24 item 1): the built-in engine refuses new
// user namespaces (the escape suites' userns-nested rows), and an agent
// that must run containers or bubblewrap inside gets them back with
// agent.toml nested_userns = true or --allow-userns, with a warning each
// run. Control: unsandboxed, unshare -U works here.
func TestNestedUsernsOptIn(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "unshare")
	if out, err := exec.Command("unshare", "-U", "true").CombinedOutput(); err != nil {
		t.Skipf("control: unshare -U fails even unsandboxed here (%v: %s), so the opt-in proves nothing", err, out)
	}
	r := newBrokerRun(t)
	probe := `unshare -U true && echo USERNS-CREATED`
	code, out := r.run(60*time.Second, nil, "run", "--", "sh", "-c", probe)
	if code == 0 || strings.Contains(out, "USERNS-CREATED") {
		t.Errorf("by default a nested user namespace was created (exit %d): %s", code, out)
	}
	code, out = r.run(60*time.Second, nil, "--allow-userns", "run", "--", "sh", "-c", probe)
	if code != 0 || !strings.Contains(out, "USERNS-CREATED") || !strings.Contains(out, "nested user namespaces are allowed (--allow-userns)") {
		t.Errorf("--allow-userns: want the namespace and a warning (exit %d): %s", code, out)
	}
	folder := filepath.Join(filepath.Dir(r.home), "agents", "containers")
	write(t, filepath.Join(folder, "agent.toml"), "command = \"/bin/sh\"\nnested_userns = true\n")
	code, out = r.run(60*time.Second, nil, folder, "-c", probe)
	if code != 0 || !strings.Contains(out, "USERNS-CREATED") || !strings.Contains(out, filepath.Join(folder, "agent.toml")+": nested_userns") {
		t.Errorf("nested_userns = true: want the namespace and a warning naming the file (exit %d): %s", code, out)
	}
	code, out = r.run(60*time.Second, nil, "--dry-run", folder)
	if code != 0 || !strings.Contains(out, "nested user namespaces ALLOWED") {
		t.Errorf("--dry-run does not say nested user namespaces are allowed (exit %d): %s", code, out)
	}
}
