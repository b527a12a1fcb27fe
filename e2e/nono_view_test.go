package e2e

// nono inside the namespace view (issue 37 item 1, SPEC "Installing nono
// never makes a run weaker"): with nono on PATH and the default posture
// (the folder's nono.json chooses nono) a run is nono-in-view: the view's
// namespaces, read-only protections, private caches and egress broker,
// with nono's own Landlock and seccomp policy inside as a second layer.
// Before (be8b617) the same run was nono alone: the real key in the
// agent's environment, .git/config writable, go build refused, host
// processes visible, and the profile of the next run in reach.

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nonoDefaultEnv is the environment of a default-posture run with the
// nono under test on PATH: no --sandbox-backend flag, so the folder's
// nono.json chooses nono by the seed's precedence.
func nonoDefaultEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	p := skipWithoutNono(t)
	path := filepath.Dir(p) + string(os.PathListSeparator) + agentBinDir() + string(os.PathListSeparator) + agentPath()
	return append([]string{"PATH=" + path}, extra...)
}

// nonoInViewCase is what TestNonoInView's rows share: the real key, the
// TLS stand-in of the Messages API that takes only it, the allow-list
// entry naming the stand-in, and the environment that hands the key to
// agent-sandbox.
type nonoInViewCase struct {
	real   string
	api    *keyStandIn
	allow  string
	keyEnv []string
}

func TestNonoInView(t *testing.T) {
	skipWithoutLandlock(t)
	needs(t, "python3")
	real := "sk-ant-REALKEYMARK-" + strings.Repeat("5", 24)
	api := newKeyStandIn(t, real)
	c := &nonoInViewCase{real: real, api: api, allow: fmt.Sprintf("127.0.0.1:%d", api.Listener.Addr().(*net.TCPAddr).Port),
		keyEnv: []string{"ANTHROPIC_API_KEY=" + real, "ANTHROPIC_BASE_URL=" + api.URL, "SSL_CERT_FILE=" + api.ca}}

	t.Run("the default posture chooses nono-in-view", func(t *testing.T) { nonoInViewPlan(t, c) })
	t.Run("the real key is absent inside", func(t *testing.T) { nonoInViewKey(t, c) })
	t.Run("claude completes a turn, its key injected", func(t *testing.T) { nonoInViewClaude(t, c) })
	t.Run("pi completes a turn, its key injected", func(t *testing.T) { nonoInViewPi(t, c) })
	t.Run("protected files are read-only", func(t *testing.T) { nonoInViewProtected(t, c) })
	t.Run("host processes are invisible", func(t *testing.T) { nonoInViewProcesses(t, c) })
	t.Run("the agent cannot write its next run's nono profile", func(t *testing.T) { nonoInViewProfile(t, c) })
	t.Run("a local model on loopback", func(t *testing.T) { nonoInViewLoopback(t, c) })
	t.Run("the agent's own sockets in unix_socket_dir_bind", func(t *testing.T) { nonoInViewSockets(t, c) })
	t.Run("offline, loopback inside works and nothing gets out", func(t *testing.T) { nonoInViewOffline(t, c) })
	t.Run("go build with a dependency works offline from warm caches", func(t *testing.T) { nonoInViewGoBuild(t, c) })
}

// nonoInViewPlan: TestNonoInView, "the default posture chooses nono-in-view".
func nonoInViewPlan(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), "--dry-run", "--json", r.folder())
	var plan struct {
		Backend  string
		Engine   struct{ ID string }
		Commands [][]string
	}
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if plan.Backend != "nono" || plan.Engine.ID != "nono-in-view" {
		t.Fatalf("backend %q engine %q, want nono and nono-in-view:\n%s", plan.Backend, plan.Engine.ID, out)
	}
	if len(plan.Commands) != 1 || !strings.HasSuffix(plan.Commands[0][0], "/nono") {
		t.Errorf("the plan does not show nono's command inside the view: %q", plan.Commands)
	}
	_, text := r.cli(60*time.Second, nonoDefaultEnv(t), "--dry-run", r.folder())
	if !strings.Contains(text, "nono: nono inside the namespace view") || !strings.Contains(text, "engine: nono inside the namespace view") || strings.Contains(text, "weaker") {
		t.Errorf("the text dry run does not name the engine, or calls it weaker:\n%s", text)
	}
}

// nonoInViewKey: TestNonoInView, "the real key is absent inside".
func nonoInViewKey(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "keyed")
	write(t, filepath.Join(folder, "agent.toml"), credentialsFolder)
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	env := nonoDefaultEnv(t, append(c.keyEnv, "PROBE_TRY_HEX="+hex.EncodeToString([]byte(c.real)))...)
	code, out := r.cli(120*time.Second, env, "--allow-host", c.allow, folder, "-c", credentialsProbe+"\nsed 's/^/PARENT=/' /proc/$PPID/comm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	checkCredentialsProbe(t, out)
	if !regexp.MustCompile(`PARENT=nono\n`).MatchString(out) {
		t.Errorf("the agent's parent is not nono (no second layer):\n%s", out)
	}
}

// nonoInViewClaude: TestNonoInView, "claude completes a turn, its key injected".
func nonoInViewClaude(t *testing.T, c *nonoInViewCase) {
	realAgent(t, "claude", "@anthropic-ai/claude-code")
	before := len(c.api.seen())
	r := newBrokerRun(t)
	code, out := r.cli(150*time.Second, nonoDefaultEnv(t, c.keyEnv...), "--allow-host", c.allow, "claude", "-p", "Say hello.")
	if code != 0 || !strings.Contains(out, standInReply) {
		t.Fatalf("exit %d, want the stand-in's reply:\n%s", code, out)
	}
	if sandboxDenial.MatchString(out) {
		t.Errorf("Claude Code hit a sandbox denial:\n%s", out)
	}
	onlyKey(t, c.api.seen()[before:], c.real)
}

// nonoInViewPi: TestNonoInView, "pi completes a turn, its key injected":
// the built-in pi folder chooses nono, so the run is nono-in-view; pi
// holds a phantom and the stand-in sees only the real key, which the
// view's broker injected.
func nonoInViewPi(t *testing.T, c *nonoInViewCase) {
	realAgent(t, "pi", "@mariozechner/pi-coding-agent@0.73.1")
	r := newBrokerRun(t)
	args := []string{"--allow-host", c.allow, "pi", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--no-session", "-p", "Say hello."}
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t, c.keyEnv...), append([]string{"--dry-run", "--json"}, args...)...)
	var plan struct {
		Backend string
		Engine  struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil || plan.Engine.ID != "nono-in-view" {
		t.Fatalf("pi's plan (exit %d, %v) is not nono-in-view:\n%s", code, err, out)
	}
	before := len(c.api.seen())
	code, out = r.cli(150*time.Second, nonoDefaultEnv(t, c.keyEnv...), args...)
	if code != 0 || !strings.Contains(out, standInReply) {
		t.Fatalf("exit %d, want the stand-in's reply:\n%s", code, out)
	}
	if sandboxDenial.MatchString(out) || strings.Contains(out, "REALKEYMARK") {
		t.Errorf("pi hit a sandbox denial or printed the real key:\n%s", out)
	}
	onlyKey(t, c.api.seen()[before:], c.real)
	// Nothing pi wrote (its config, sessions, logs) holds the key.
	filepath.WalkDir(filepath.Dir(r.home), func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "REALKEYMARK") {
				t.Errorf("the real key is in %s", p)
			}
		}
		return nil
	})
}

// nonoInViewProtected: TestNonoInView, "protected files are read-only".
func nonoInViewProtected(t *testing.T, c *nonoInViewCase) {
	needs(t, "git")
	r := newBrokerRun(t)
	git := exec.Command("git", "init", "-q", r.work)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	config := filepath.Join(r.work, ".git", "config")
	before, _ := os.ReadFile(config)
	probe := `for a in 'echo "[core]
fsmonitor = evil" >> .git/config' 'mv .git/config .git/c2' 'rm -f .git/config' 'echo evil > .git/hooks/pre-commit' 'chmod 0777 .git/config'; do
  if sh -c "$a" 2>/dev/null; then echo "DID: $a"; else echo "REFUSED: $a"; fi
done
echo x > inproject && echo WORKDIR-WRITABLE`
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), "--offline", r.folder(), "-c", probe)
	if code != 0 || !strings.Contains(out, "WORKDIR-WRITABLE") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if strings.Contains(out, "DID:") {
		t.Errorf("a protected file was changed inside:\n%s", out)
	}
	if after, _ := os.ReadFile(config); string(after) != string(before) {
		t.Errorf(".git/config changed on the host: %q", after)
	}
	if _, err := os.Stat(filepath.Join(r.work, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("a hook was planted on the host")
	}
}

// nonoInViewProcesses: TestNonoInView, "host processes are invisible".
func nonoInViewProcesses(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	marker := fmt.Sprintf("%d", 1000000+time.Now().UnixNano()%1000000)
	host := exec.Command("sleep", marker)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	pid := strconv.Itoa(host.Process.Pid)
	probe := fmt.Sprintf(`cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' | grep -c "slee[p] %s" | sed 's/^/SEEN=/'; kill -0 %s 2>/dev/null && echo SIGNALLED; echo DONE`, marker, pid)
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), "--offline", r.folder(), "-c", probe)
	if code != 0 || !strings.Contains(out, "DONE") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "SEEN=0") || strings.Contains(out, "SIGNALLED") {
		t.Errorf("a host process is visible inside:\n%s", out)
	}
}

// nonoInViewProfile: TestNonoInView, "the agent cannot write its next run's nono profile".
func nonoInViewProfile(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	state := filepath.Join(r.home, ".local", "state", "agent-sandbox")
	probe := `for f in "$S/nono-runs/planted.json" "$S/agents/sh/nono-profile.json" "$S/nono-runs"/run-*/nono-profile.json; do
  if (echo '{"filesystem": {"allow": ["/"]}}' > "$f") 2>/dev/null; then echo "WROTE: $f"; else echo "REFUSED: $f"; fi
done
ls "$S/nono-runs" >/dev/null 2>&1 && echo RUNS-LISTED; echo DONE`
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t, "S="+state), "--offline", r.folder(), "-c", probe)
	if code != 0 || !strings.Contains(out, "DONE") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if strings.Contains(out, "WROTE:") || strings.Contains(out, "RUNS-LISTED") {
		t.Errorf("the agent reached nono's profiles:\n%s", out)
	}
	// The run's own directory is gone after the run.
	entries, _ := os.ReadDir(filepath.Join(state, "nono-runs"))
	if len(entries) != 0 {
		t.Errorf("nono's run directories are left behind: %v", entries)
	}
}

// Issue 37 item 5: a local model's API on the host's loopback, under
// an allow list (--allow-host 127.0.0.1:PORT) and under a file's
// block with open_port, is reached at once; another port is refused
// at once. Before (nono alone) the first was refused and the fixes
// its message named hung the agent for minutes.
func nonoInViewLoopback(t *testing.T, c *nonoInViewCase) {
	svc := newAPIStandIn(t)
	sp := svc.port()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	op := other.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`curl -sS -o /dev/null -w 'model=%%{http_code}\n' -X POST -d '{}' http://127.0.0.1:%d/v1/messages; curl -sS --max-time 5 http://127.0.0.1:%d/ && echo LEAK-other; echo " other-exit=$?"`, sp, op)
	r := newBrokerRun(t)
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), "--allow-host", fmt.Sprintf("127.0.0.1:%d", sp), r.folder(), "-c", script)
	if code != 0 || !strings.Contains(out, "model=200") || strings.Contains(out, "LEAK") {
		t.Errorf("--allow-host 127.0.0.1:%d: exit %d, want the model reached and no other port:\n%s", sp, code, out)
	}
	write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), fmt.Sprintf(`{"network": {"block": true, "open_port": [%d]}}`, sp))
	code, out = r.cli(60*time.Second, nonoDefaultEnv(t), r.folder(), "-c", script)
	if code != 0 || !strings.Contains(out, "model=200") || strings.Contains(out, "LEAK") {
		t.Errorf("block with open_port %d: exit %d, want the model reached and no other port:\n%s", sp, code, out)
	}
}

// unix_socket_dir_bind: inside the view no host socket is there, so
// the directory is a plain grant of nono's; nono's pathname
// mediation does not start inside the view (nono 0.78.0).
func nonoInViewSockets(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	sockDir := filepath.Join(r.home, ".agent-browser")
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.folder(), "sandbox", "nono.json"), `{"filesystem": {"unix_socket_dir_bind": ["~/.agent-browser"]}, "network": {"allow_domain": ["api.example.com"]}}`+"\n")
	probe := `python3 -c '
import os, socket
p = os.path.expanduser("~/.agent-browser/s.sock")
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect(p); print("SOCKET-OK")'`
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), r.folder(), "-c", probe)
	if code != 0 || !strings.Contains(out, "SOCKET-OK") {
		t.Errorf("exit %d, want the agent's socket bound and connected:\n%s", code, out)
	}
}

// Offline the view's namespace has no route out; nono's own block
// would also refuse the sandbox's loopback (a test server and its
// client), so nono's network is left to the view.
func nonoInViewOffline(t *testing.T, c *nonoInViewCase) {
	r := newBrokerRun(t)
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	code, out := r.cli(60*time.Second, nonoDefaultEnv(t), "--offline", r.folder(), "-c", fmt.Sprintf(`python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
c = socket.socket(); c.connect(s.getsockname()); print("LOOPBACK-OK")
try:
    socket.create_connection(("127.0.0.1", %d), timeout=5); print("HOST-REACHED")
except OSError as e:
    print("HOST-REFUSED")'`, host.Addr().(*net.TCPAddr).Port))
	if code != 0 || !strings.Contains(out, "LOOPBACK-OK") || !strings.Contains(out, "HOST-REFUSED") {
		t.Errorf("exit %d, want the sandbox's loopback working and the host's refused:\n%s", code, out)
	}
}

// nonoInViewGoBuild: TestNonoInView, "go build with a dependency works offline from warm caches".
func nonoInViewGoBuild(t *testing.T, c *nonoInViewCase) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH")
	}
	r := newBrokerRun(t)
	proxy := filepath.Join(filepath.Dir(r.home), "proxy")
	writeModule(t, proxy, "example.com/dep", "v1.0.0", "package dep\n\n// Answer is the answer.\nfunc Answer() int { return 42 }\n")
	write(t, filepath.Join(r.work, "go.mod"), "module example.com/app\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n")
	write(t, filepath.Join(r.work, "main.go"), "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(dep.Answer()) }\n")
	goDir := filepath.Dir(goBin)
	cmd := exec.Command(goBin, "build", "./...")
	cmd.Dir = r.work
	cmd.Env = []string{"HOME=" + r.home, "PATH=" + goDir + ":/usr/bin:/bin", "GOPROXY=file://" + proxy, "GONOSUMDB=example.com", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("host build: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		filepath.WalkDir(r.home, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
	})
	caches := []string{filepath.Join(r.home, ".cache", "go-build"), filepath.Join(r.home, "go", "pkg", "mod")}
	before := treeSum(t, caches...)
	env := nonoDefaultEnv(t)
	env[0] = "PATH=" + goDir + ":" + strings.TrimPrefix(env[0], "PATH=")
	code, out := r.cli(180*time.Second, append(env, "GOTOOLCHAIN=local"), "--offline", r.folder(), "-c", "go build -o app . && ./app && echo GO-OK")
	if code != 0 || !strings.Contains(out, "42") || !strings.Contains(out, "GO-OK") {
		t.Errorf("go build inside nono-in-view, offline, failed (exit %d): %s", code, out)
	}
	if after := treeSum(t, caches...); after != before {
		t.Errorf("the host's Go caches changed during the sandboxed build")
	}
}

// TestNonoAloneCredentials (issue 37 item 2): where no view can be built
// and the weaker sandbox is not accepted, nono runs alone, with no
// credential route of agent-sandbox's: the agent gets no routed key, and
// one line says so and how to fix it. Before (be8b617) the real key was in
// the agent's environment. (As root the launcher's own environment, which
// holds the key the user exported, stays readable through /proc under
// nono alone: README, "Escape classes by backend".)
func TestNonoAloneCredentials(t *testing.T) {
	skipWithoutNono(t)
	real := "sk-ant-REALKEYMARK-" + strings.Repeat("3", 24)
	r := newNonoAloneRun(t)
	folder := filepath.Join(filepath.Dir(r.home), "agents", "keyed")
	write(t, filepath.Join(folder, "agent.toml"), credentialsFolder)
	write(t, filepath.Join(folder, "sandbox", "nono.json"), "{}\n")
	probe := `echo "KEY=$ANTHROPIC_API_KEY"; grep -rIl REALKEYMARK "$HOME" "$PWD" /tmp 2>/dev/null | sed 's/^/FILE-HIT=/'; echo DONE`
	code, out := r.cli(60*time.Second, []string{"ANTHROPIC_API_KEY=" + real}, "--sandbox-backend", "nono", "--allow-host", "api.anthropic.com", folder, "-c", probe)
	if code != 0 || !strings.Contains(out, "DONE") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if !strings.Contains(out, "KEY=\n") || strings.Contains(out, "FILE-HIT=") {
		t.Errorf("the real key reached the agent under nono alone:\n%s", out)
	}
	if !strings.Contains(out, "credentials ANTHROPIC_API_KEY: not given to the agent") || !strings.Contains(out, "nono runs alone") {
		t.Errorf("no line says the key is withheld and why:\n%s", out)
	}
}
