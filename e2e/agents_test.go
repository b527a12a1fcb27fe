package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// agentBinDir is where .ci/run installs the real agents (npm prefix), unless
// AGENT_SANDBOX_E2E_AGENTS names another directory holding their bins.
func agentBinDir() string {
	if d := os.Getenv("AGENT_SANDBOX_E2E_AGENTS"); d != "" {
		return d
	}
	return "/opt/agent-sandbox-e2e/node_modules/.bin"
}

// realAgent returns the path of a real agent's bin, or skips naming how to
// install it.
func realAgent(t *testing.T, name, pkg string) string {
	t.Helper()
	p := filepath.Join(agentBinDir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed in %s: npm install --prefix %s %s (.ci/run does this; or set AGENT_SANDBOX_E2E_AGENTS)", name, agentBinDir(), filepath.Dir(filepath.Dir(agentBinDir())), pkg)
	}
	return p
}

// runBuiltin runs `agent-sandbox FLAGS AGENT ARGS...` with the agent's bin
// directory on PATH, a throwaway HOME and a fresh workdir.
func runBuiltin(t *testing.T, bin string, flags []string, agent string, args ...string) (int, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append(append([]string{}, flags...), agent), args...)...)
	cmd.Dir = work
	cmd.Env = withCover([]string{"HOME=" + home, "PATH=" + agentBinDir() + string(os.PathListSeparator) + pathFor(flags), "LANG=C.UTF-8", "TERM=dumb"})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agent-sandbox: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("agent-sandbox %s did not finish in 90 s: %s", agent, out.String())
	}
	return code, out.String()
}

// sandboxDenial matches what a blocked file or socket access looks like.
var sandboxDenial = regexp.MustCompile(`(?i)EACCES|EPERM|permission denied|operation not permitted`)

// TestRealAgentsStartSandboxed starts the real Claude Code and pi through the
// built-in agent folders under the built-in landlock engine, offline and,
// with no flag at all (nono is absent here, so the engine takes over), with
// their built-in allow lists served by the egress broker.
func TestRealAgentsStartSandboxed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real agents; skipped with -short")
	}
	if why := landlockMissing(); why != "" {
		t.Skip(why)
	}
	bin := buildAgentSandbox(t)
	flags := []string{"--sandbox-backend", "landlock", "--offline"}

	t.Run("claude --version", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		code, out := runBuiltin(t, bin, flags, "claude", "--version")
		if code != 0 || !regexp.MustCompile(`(?m)^\d+\.\d+\.\d+ \(Claude Code\)$`).MatchString(out) {
			t.Fatalf("exit %d, want 0 and a version line: %s", code, out)
		}
	})
	t.Run("pi --version", func(t *testing.T) {
		realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
		code, out := runBuiltin(t, bin, flags, "pi", "--version")
		if code != 0 || !regexp.MustCompile(`(?m)^\d+\.\d+\.\d+$`).MatchString(out) {
			t.Fatalf("exit %d, want 0 and a version line: %s", code, out)
		}
	})
	for _, agent := range []string{"claude", "pi"} {
		t.Run(agent+" --version with its built-in allow list, no flags", func(t *testing.T) {
			pkg := map[string]string{"claude": "@anthropic-ai/claude-code", "pi": "@mariozechner/pi-coding-agent@0.73.1"}[agent]
			realAgent(t, agent, pkg)
			if _, err := exec.LookPath("nono"); err == nil {
				t.Skip("nono is on PATH: the default backend would be nono, not the built-in engine")
			}
			code, out := runBuiltin(t, bin, nil, agent, "--version")
			if code != 0 || !regexp.MustCompile(`(?m)^\d+\.\d+\.\d+`).MatchString(out) {
				t.Fatalf("exit %d, want 0 and a version line: %s", code, out)
			}
			if !strings.Contains(out, "enforcing the same policy with the built-in landlock engine") {
				t.Errorf("no fallback notice (nono missing): %s", out)
			}
		})
	}
	t.Run("claude without credentials ends in its own auth error", func(t *testing.T) {
		realAgent(t, "claude", "@anthropic-ai/claude-code")
		code, out := runBuiltin(t, bin, flags, "claude", "-p", "hello")
		if code == 0 || code == 125 {
			t.Fatalf("exit %d, want Claude Code's own failure: %s", code, out)
		}
		lower := strings.ToLower(out)
		if !strings.Contains(lower, "login") && !strings.Contains(lower, "api key") && !strings.Contains(lower, "network") && !strings.Contains(lower, "connect") {
			t.Errorf("no auth or network error from Claude Code: %s", out)
		}
		if sandboxDenial.MatchString(out) {
			t.Errorf("Claude Code hit a sandbox denial: %s", out)
		}
	})
}

// TestResolveRealPrograms: `agent-sandbox resolve` finds the complete
// closure of the real Claude Code (a native ELF behind an npm symlink), pi
// (an env-shebang script run by node) and node on this machine.
func TestResolveRealPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	// node: AGENT_SANDBOX_E2E_NODE or node on PATH; resolve reports the
	// file behind any symlink.
	node, why := tool("node")
	nodeReal := node
	if node == "" {
		node = "node (" + why + ")"
	} else if r, err := filepath.EvalSymlinks(node); err == nil {
		nodeReal = r
	}
	cases := []struct {
		name, path, wantPath string
		wantFiles            []string
	}{
		{"node", node, nodeReal, []string{"libc.so.6", "ld-linux"}},
		{"claude", filepath.Join(agentBinDir(), "claude"), "/bin/claude.exe", []string{"libc.so.6", "ld-linux"}},
		{"pi", filepath.Join(agentBinDir(), "pi"), "/dist/cli.js", []string{"/usr/bin/env", "/node", "libc.so.6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.path); err != nil {
				t.Skipf("%s is not installed here (%v); .ci/run installs it", c.path, err)
			}
			out, err := exec.Command(bin, "resolve", "--json", c.path).Output()
			if err != nil {
				t.Fatalf("resolve %s: %v\n%s", c.path, err, out)
			}
			var r struct {
				Path    string
				Files   []string
				Dirs    []string
				Missing []any
			}
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(r.Path, c.wantPath) || len(r.Missing) != 0 || len(r.Dirs) == 0 {
				t.Fatalf("path %s (want …%s), missing %v, dirs %v", r.Path, c.wantPath, r.Missing, r.Dirs)
			}
			all := strings.Join(r.Files, "\n")
			for _, f := range c.wantFiles {
				if !strings.Contains(all, f) {
					t.Errorf("closure lacks %s:\n%s", f, all)
				}
			}
		})
	}
}
