package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNonoInViewToolchainCaches (issue 37, "Done when"): under nono inside
// the view, `sh -c 'npm ci'` and `cargo build --offline` work offline from
// the host's warm caches, through the view's private per-project layers
// that nono's profile grants again, and the host's caches are byte for
// byte what they were (TestToolchainCaches is the view's, and
// TestWeakerToolchainCaches the weaker sandbox's version; `go build` is
// TestNonoInView's row). A top-level command named npm is refused before
// the run, by nono's dangerous-commands list, inside the view as under
// nono alone; from a shell it runs.
func TestNonoInViewToolchainCaches(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	// inView is the environment of a default-posture run (nono on PATH,
	// the folder's nono.json) with dir first on PATH.
	inView := func(dir string) []string {
		env := nonoDefaultEnv(t)
		env[0] = "PATH=" + dir + ":" + strings.TrimPrefix(env[0], "PATH=")
		return env
	}
	// parent prints the agent's parent: nono, inside the view.
	const parent = ` && sed 's/^/PARENT=/' /proc/$PPID/comm`
	plan := func(t *testing.T, out string) {
		t.Helper()
		if !strings.Contains(out, "PARENT=nono\n") {
			t.Errorf("the agent's parent is not nono (no second layer):\n%s", out)
		}
	}

	t.Run("npm", func(t *testing.T) {
		work := filepath.Join(filepath.Dir(r.work), "npmwork")
		npmDir, cache := npmProject(t, r, work)
		before := treeSum(t, cache)
		code, out := r.cli(180*time.Second, inView(npmDir), "--offline", "--workdir", work, r.folder(), "-c",
			`sh -c 'npm ci' && node -e 'console.log("DEP", require("dep-x"))'`+parent)
		if code != 0 || !strings.Contains(out, "DEP 42") {
			t.Errorf("npm ci inside nono-in-view, offline, failed (exit %d): %s", code, out)
		}
		plan(t, out)
		if after := treeSum(t, cache); after != before {
			t.Errorf("the host's npm cache changed during the sandboxed npm ci")
		}
	})

	t.Run("cargo", func(t *testing.T) {
		dir := cargoDir(t)
		work := filepath.Join(filepath.Dir(r.work), "cargowork")
		cache := cargoProject(t, r, work, dir)
		before := treeSum(t, cache)
		code, out := r.cli(300*time.Second, inView(dir), "--offline", "--workdir", work, r.folder(), "-c",
			os.Getenv("CARGO_PROBE")+"cargo build --offline -q && ./target/debug/app"+parent)
		if code != 0 || !strings.Contains(out, "CRATE 42") {
			t.Errorf("cargo build inside nono-in-view, offline, failed (exit %d): %s", code, out)
		}
		plan(t, out)
		if after := treeSum(t, cache); after != before {
			t.Errorf("the host's cargo registry changed during the sandboxed build")
		}
	})

	t.Run("a top-level command named npm", func(t *testing.T) {
		npmDir, _ := npmProject(t, r, filepath.Join(filepath.Dir(r.work), "npmtop"))
		folder := filepath.Join(filepath.Dir(r.home), "agents", "npm")
		write(t, filepath.Join(folder, "agent.toml"), "command = \""+filepath.Join(npmDir, "npm")+"\"\n")
		write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
		code, out := r.cli(60*time.Second, inView(npmDir), "--offline", folder, "--version")
		if code != 125 || !strings.Contains(out, `nono refuses to start a command named "npm"`) {
			t.Errorf("a top-level npm under nono-in-view: exit %d, want 125 and nono's dangerous-commands refusal:\n%s", code, out)
		}
		// From a shell inside the same view and nono, npm runs.
		code, out = r.cli(60*time.Second, inView(npmDir), "--offline", r.folder(), "-c", "npm --version >/dev/null && echo NPM-RAN")
		if code != 0 || !strings.Contains(out, "NPM-RAN") {
			t.Errorf("npm from a shell under nono-in-view (exit %d): %s", code, out)
		}
	})
}
