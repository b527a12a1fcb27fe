package e2e

// End-to-end tests of the sbx backend against the real Docker Sandboxes
// CLI. They run only where sbx is installed, signed in and has a global
// policy (and, on Linux, /dev/kvm exists); elsewhere they skip, naming what
// is missing. The last test needs no sbx: it loads the generated pi
// extension into a real pi when pi is installed.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/backend/sbx"
)

// sbxE2ERequire skips unless the real sbx can run sandboxes here, and
// returns its path.
func sbxE2ERequire(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/dev/kvm"); err != nil {
			t.Skip("sbx e2e: /dev/kvm is missing (Docker Sandboxes needs KVM on Linux)")
		}
	}
	path, err := exec.LookPath("sbx")
	if err != nil {
		t.Skip("sbx e2e: sbx (Docker Sandboxes) is not installed: `sbx` is not on PATH")
	}
	if out, err := sbxE2ERun(path, "ls", "-q"); err != nil {
		t.Skipf("sbx e2e: sbx is not signed in or not working (`sbx ls -q`: %v: %s); run `sbx login`", err, out)
	}
	if out, err := sbxE2ERun(path, "policy", "ls"); err != nil {
		t.Skipf("sbx e2e: no usable global sbx policy (`sbx policy ls`: %v: %s); run `sbx policy init deny-all`", err, out)
	}
	return path
}

func sbxE2ERun(path string, args ...string) (string, error) {
	cmd := exec.Command(path, args...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// sbxE2EAgent is a throwaway agent folder (outside the workdir) whose
// command is a shell script; its id is unique so that the test's sandboxes,
// state dir and records are its own.
type sbxE2EAgent struct {
	id, dir, workdir, ro string
}

func sbxE2ENewAgent(t *testing.T, sbxPath, script, sbxJSON string) sbxE2EAgent {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	a := sbxE2EAgent{
		id:      fmt.Sprintf("e2e-sbx-%d-%04d", time.Now().Unix(), rand.Intn(10000)),
		workdir: filepath.Join(root, "proj"),
		ro:      filepath.Join(root, "readonly"),
	}
	a.dir = filepath.Join(root, "agents", a.id)
	for _, d := range []string{filepath.Join(a.dir, "sandbox"), a.workdir, a.ro} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script = strings.NewReplacer("@RO@", a.ro, "@WD@", a.workdir).Replace(script)
	toml := fmt.Sprintf("command = \"/bin/sh\"\nargs = [\"-c\", %q]\n", script)
	os.WriteFile(filepath.Join(a.dir, "agent.toml"), []byte(toml), 0o644)
	os.WriteFile(filepath.Join(a.dir, "sandbox", "sbx.json"), []byte(strings.ReplaceAll(sbxJSON, "@RO@", a.ro)), 0o644)
	t.Cleanup(func() {
		out, _ := sbxE2ERun(sbxPath, "ls", "-q")
		for _, n := range sbx.ParseList(out) {
			if strings.HasPrefix(n, sbx.NamePrefix+a.id+"-") {
				if o, err := sbxE2ERun(sbxPath, "rm", "-f", n); err != nil {
					t.Logf("cleanup: sbx rm -f %s: %v: %s", n, err, o)
				}
			}
		}
		home, _ := os.UserHomeDir()
		state := os.Getenv("XDG_STATE_HOME")
		if state == "" {
			state = filepath.Join(home, ".local", "state")
		}
		os.RemoveAll(filepath.Join(state, "agent-sandbox", "agents", a.id))
		for _, n := range sbx.Records(filepath.Join(state, "agent-sandbox")) {
			if strings.HasPrefix(n, sbx.NamePrefix+a.id+"-") {
				sbx.DeleteRecord(filepath.Join(state, "agent-sandbox"), n)
			}
		}
	})
	return a
}

func sbxE2EExec(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func sbxE2EName(t *testing.T, bin string, args ...string) string {
	t.Helper()
	code, out, errs := sbxE2EExec(t, bin, append([]string{"--dry-run", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("dry-run: exit %d: %s", code, errs)
	}
	var plan struct{ Commands [][]string }
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	create := plan.Commands[0]
	for i, a := range create {
		if a == "--name" {
			return create[i+1]
		}
	}
	t.Fatalf("no --name in %q", create)
	return ""
}

// TestSbxRealRun: the workdir is shared read-write at its host path, a read
// grant is read-only, HOME is the guest home, the agent's exit status comes
// back, and a second run attaches to the same sandbox.
func TestSbxRealRun(t *testing.T) {
	sbxPath := sbxE2ERequire(t)
	bin := buildAgentSandbox(t)
	home, _ := os.UserHomeDir()
	script := fmt.Sprintf(`echo hello-from-guest > guest.txt
[ "$HOME" = %q ] || exit 11
[ "$(pwd)" = @WD@ ] || exit 12
touch @RO@/x 2>/dev/null && exit 13
exit 7`, home)
	a := sbxE2ENewAgent(t, sbxPath, script, `{"filesystem": {"read": ["@RO@"]}}`)

	code, _, stderr := sbxE2EExec(t, bin, "--workdir", a.workdir, a.dir)
	if code != 7 {
		t.Fatalf("exit %d, want the agent's 7 (11: HOME wrong, 12: not in the workdir, 13: read-only mount writable); stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, sbx.Banner) {
		t.Errorf("no %q on stderr:\n%s", sbx.Banner, stderr)
	}
	b, err := os.ReadFile(filepath.Join(a.workdir, "guest.txt"))
	if err != nil || strings.TrimSpace(string(b)) != "hello-from-guest" {
		t.Errorf("the guest's write to the workdir did not reach the host: %q, %v", b, err)
	}
	name := sbxE2EName(t, bin, "--workdir", a.workdir, a.dir)
	if code, _, stderr := sbxE2EExec(t, bin, "--workdir", a.workdir, a.dir); code != 7 {
		t.Fatalf("second run (attach): exit %d\n%s", code, stderr)
	}
	out, _ := sbxE2ERun(sbxPath, "ls", "-q")
	if n := strings.Count("\n"+out+"\n", "\n"+name+"\n"); n != 1 {
		t.Errorf("sbx ls lists %s %d times after two runs, want once:\n%s", name, n, out)
	}
}

// TestSbxRealOffline: --offline's deny '**' keeps the guest off the network.
func TestSbxRealOffline(t *testing.T) {
	sbxPath := sbxE2ERequire(t)
	bin := buildAgentSandbox(t)
	script := `if command -v curl >/dev/null; then curl -sS --max-time 15 -o /dev/null https://example.com && exit 8; exit 0; fi
echo no-curl; exit 0`
	a := sbxE2ENewAgent(t, sbxPath, script, `{}`)
	code, stdout, stderr := sbxE2EExec(t, bin, "--offline", "--workdir", a.workdir, a.dir)
	if code != 0 {
		t.Fatalf("exit %d (8: the guest reached example.com under --offline)\n%s", code, stderr)
	}
	if strings.Contains(stdout, "no-curl") {
		t.Log("the guest has no curl: only the setup sequence was exercised")
	}
}

// TestSbxRealStalePrune: a changed grant makes the old sandbox stale;
// prune lists it and --yes removes it with sbx rm.
func TestSbxRealStalePrune(t *testing.T) {
	sbxPath := sbxE2ERequire(t)
	bin := buildAgentSandbox(t)
	a := sbxE2ENewAgent(t, sbxPath, "exit 0", `{"filesystem": {"read": ["@RO@"]}}`)
	old := sbxE2EName(t, bin, "--workdir", a.workdir, a.dir)
	if code, _, stderr := sbxE2EExec(t, bin, "--workdir", a.workdir, a.dir); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(a.dir, "sandbox", "sbx.json"), []byte(`{}`), 0o644)
	_, stdout, _ := sbxE2EExec(t, bin, "prune")
	if !strings.Contains(stdout, "stale") || !strings.Contains(stdout, old) {
		t.Fatalf("prune does not list %s as stale:\n%s", old, stdout)
	}
	if code, stdout, stderr := sbxE2EExec(t, bin, "prune", "--yes"); code != 0 || !strings.Contains(stdout, "removed "+old) {
		t.Fatalf("prune --yes: exit %d\n%s%s", code, stdout, stderr)
	}
	out, _ := sbxE2ERun(sbxPath, "ls", "-q")
	if strings.Contains(out, old) {
		t.Errorf("%s still listed after prune --yes:\n%s", old, out)
	}
}

// TestSbxPiExtensionRealPi loads the generated extension into the real pi
// (when installed; no sbx needed) and checks, through a second extension
// that reads pi's model registry at session start, that a loopback baseUrl
// from models.json became host.docker.internal.
func TestSbxPiExtensionRealPi(t *testing.T) {
	// Where .ci/run installs the real agents (AGENT_SANDBOX_E2E_AGENTS),
	// then PATH.
	pi := filepath.Join(agentBinDir(), "pi")
	if _, err := os.Stat(pi); err != nil {
		p, err := exec.LookPath("pi")
		if err != nil {
			t.Skipf("pi is not installed (not in %s, not on PATH): cannot load the generated extension into it; npm install --prefix %s @mariozechner/pi-coding-agent@0.73.1 (.ci/run does this)", agentBinDir(), filepath.Dir(filepath.Dir(agentBinDir())))
		}
		pi = p
	}
	dir := t.TempDir()
	agentDir := filepath.Join(dir, "home", ".pi", "agent")
	os.MkdirAll(agentDir, 0o755)
	os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(`{"providers": {"e2e-local": {"baseUrl": "http://localhost:9/v1", "api": "openai-completions", "apiKey": "x", "models": [{"id": "m"}]}}}`), 0o644)
	ext := filepath.Join(dir, "state", "sbx", "pi-loopback-providers.ts")
	if err := sbx.WritePiExtension(ext); err != nil {
		t.Fatal(err)
	}
	seen := filepath.Join(dir, "seen.json")
	probe := filepath.Join(dir, "probe.ts")
	os.WriteFile(probe, []byte(fmt.Sprintf(`import { writeFileSync } from "node:fs";
export default function (pi) {
  pi.on("session_start", (_e, ctx) => {
    const urls = ctx.modelRegistry.getAll().filter((m) => m.provider === "e2e-local").map((m) => m.baseUrl);
    writeFileSync(%q, JSON.stringify(urls));
  });
}
`, seen)), 0o644)
	cmd := exec.Command(pi, "--extension", ext, "--extension", probe, "--provider", "e2e-local", "--model", "m", "-p", "hi")
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "PI_CODING_AGENT_DIR=", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0", "PI_OFFLINE=1")
	out, _ := cmd.CombinedOutput() // the request itself fails: nothing listens
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatalf("pi never reached session_start with the extensions loaded: %v\n%s", err, out)
	}
	if got := string(b); got != `["http://host.docker.internal:9/v1"]` {
		t.Errorf("pi's registry has %s, want the loopback baseUrl rewritten to host.docker.internal", got)
	}
}
