package e2e

// What the suite runs against, taken from the environment so that it runs
// the same on Debian (CI), in a Nix build and on a NixOS machine:
//
//   AGENT_SANDBOX_E2E_BIN       an installed agent-sandbox to test instead of
//                               building ./cmd/agent-sandbox
//   AGENT_SANDBOX_E2E_PATH      PATH of the agents the suite starts (default:
//                               the test's own PATH without the entries
//                               inside the user's home, which no sandbox
//                               grants: pyenv shims, ~/go/bin)
//   AGENT_SANDBOX_E2E_PYTHON    the Python 3 the network, socket and terminal
//                               probes run (default: python3 on that PATH)
//   AGENT_SANDBOX_E2E_NODE      the node `resolve` is checked against
//                               (default: node on that PATH)
//   AGENT_SANDBOX_E2E_AGENTS    where the real Claude Code and pi are
//                               installed (agents_test.go)
//   AGENT_SANDBOX_E2E_COVERDIR  build the binary with -cover and collect its
//                               coverage data here
//
// Under `go test -cover` the binary is built with -cover as well and writes
// its coverage data into the test's own -test.gocoverdir, so that the code
// it runs (the built-in engine's whole run path) is counted.

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
	// coverDir is where a -cover binary writes its coverage data ("" when
	// the binary is not built with -cover).
	coverDir string
)

func TestMain(m *testing.M) {
	if os.Getenv(noLandlockExecVar) != "" {
		noLandlockExec() // the test binary as a wrapper: never returns
	}
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "agent-sandbox-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	buildDir = dir
	if os.Getenv("AGENT_SANDBOX_E2E_BIN") == "" {
		coverDir = os.Getenv("AGENT_SANDBOX_E2E_COVERDIR")
		if coverDir == "" && testing.CoverMode() != "" {
			if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
				coverDir = f.Value.String()
			} else {
				coverDir = filepath.Join(dir, "covdata")
			}
		}
		if coverDir != "" {
			if coverDir, err = filepath.Abs(coverDir); err == nil {
				err = os.MkdirAll(coverDir, 0o755)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "e2e: coverage directory:", err)
				return 1
			}
			// Every run of the binary inherits it (runs with an explicit
			// environment add it through withCover).
			os.Setenv("GOCOVERDIR", coverDir)
		}
	}
	return m.Run()
}

// buildAgentSandbox returns the agent-sandbox under test: AGENT_SANDBOX_E2E_BIN
// when set, otherwise ./cmd/agent-sandbox built once per test binary (with
// -cover when coverage is collected).
func buildAgentSandbox(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AGENT_SANDBOX_E2E_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("AGENT_SANDBOX_E2E_BIN=%s: %v", p, err)
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			t.Fatalf("AGENT_SANDBOX_E2E_BIN=%s is not an executable file (%v): set it to an installed agent-sandbox, or unset it to build ./cmd/agent-sandbox", p, err)
		}
		return abs
	}
	buildOnce.Do(func() {
		bin := filepath.Join(buildDir, "agent-sandbox")
		args := []string{"build", "-o", bin}
		if coverDir != "" {
			args = append(args, "-cover")
		}
		cmd := exec.Command("go", append(args, "./cmd/agent-sandbox")...)
		cmd.Dir = ".."
		// Static, as the README builds it.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s ./cmd/agent-sandbox: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		builtBin = bin
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// homeTempDir makes a directory (mode 0755, symlinks resolved) in the
// caller's home, outside /tmp and /var/tmp, whose private tmpfs in the
// view would change what a grant there means; it is removed after the
// test.
func homeTempDir(t *testing.T, prefix string) string {
	t.Helper()
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("this test's files lie in the caller's home, outside /tmp and /var/tmp: %v", err)
	}
	dir, err := os.MkdirTemp(userHome, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withCover adds GOCOVERDIR to an explicit environment when the binary
// writes coverage data (without it a -cover binary warns on every run).
func withCover(env []string) []string {
	if coverDir == "" {
		return env
	}
	return append(env, "GOCOVERDIR="+coverDir)
}

// agentPath is the PATH of the agents the suite starts:
// AGENT_SANDBOX_E2E_PATH, or the test's PATH without the entries inside the
// user's home (a sandboxed agent cannot run a program from there, so a
// pyenv shim first on PATH would fail every probe), or /usr/bin:/bin.
func agentPath() string {
	if p := os.Getenv("AGENT_SANDBOX_E2E_PATH"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	var keep []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(d) || (home != "" && home != "/" && (d == home || strings.HasPrefix(d, home+"/"))) {
			continue
		}
		keep = append(keep, d)
	}
	if len(keep) == 0 {
		return "/usr/bin:/bin"
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// toolVar names the variable that overrides where a tool is found.
var toolVar = map[string]string{"python3": "AGENT_SANDBOX_E2E_PYTHON", "node": "AGENT_SANDBOX_E2E_NODE"}

// tool returns the absolute path of a program the suite needs: its
// AGENT_SANDBOX_E2E_* variable, or the program on agentPath(); "" and why
// when there is none.
func tool(name string) (string, string) {
	if v := toolVar[name]; v != "" {
		if p := os.Getenv(v); p != "" {
			if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return "", fmt.Sprintf("%s=%s is not an executable file (%v)", v, p, err)
			}
			return p, ""
		}
	}
	for _, d := range filepath.SplitList(agentPath()) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, ""
		}
	}
	why := fmt.Sprintf("%s is not on PATH=%s", name, agentPath())
	if v := toolVar[name]; v != "" {
		why += " (install it, or set " + v + " or AGENT_SANDBOX_E2E_PATH; .ci/run installs it)"
	}
	return "", why
}
