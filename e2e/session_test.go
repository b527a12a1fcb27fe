package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sessionEnv is the environment of a session test's agent-sandbox runs.
func sessionEnv(home string, extra ...string) []string {
	return withCover(append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}, extra...))
}

// liveSession is a running `agent-sandbox run` whose agent waits on its
// stdin: closing stdin ends it.
type liveSession struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *strings.Builder
	done  chan error
	id    string
}

// sessionInfo is what `ps --json` prints of one session.
type sessionInfo struct {
	ID        string `json:"id"`
	Agent     string `json:"agent"`
	Workdir   string `json:"workdir"`
	Engine    string `json:"engine"`
	Network   string `json:"network"`
	Processes int    `json:"processes"`
	Allowed   int    `json:"allowed"`
	Refused   int    `json:"refused"`
}

// psJSON runs `agent-sandbox ps --json`.
func psJSON(t *testing.T, bin string, prefix, env []string, dir string) []sessionInfo {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), bin), "ps", "--json")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ps --json: %v: %s", err, out)
	}
	var l []sessionInfo
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("ps --json: %v: %s", err, out)
	}
	return l
}

// startSession starts `agent-sandbox [flags] run -- sh -c 'echo ready; read x'`
// in work and returns once the agent runs and ps lists its session.
func startSession(t *testing.T, bin string, prefix, env []string, work string, flags ...string) *liveSession {
	t.Helper()
	return startSessionOf(t, bin, prefix, env, work, append(flags, "run", "--", "sh")...)
}

// sessionScript is what a session test's agent runs (sh -c).
const sessionScript = "echo agent-file > agent.txt; echo ready; read x; echo agent-ends"

// startSessionOf is startSession with the agent given by args (flags and
// an agent whose command is sh, or run -- sh).
func startSessionOf(t *testing.T, bin string, prefix, env []string, work string, args ...string) *liveSession {
	t.Helper()
	argv := append(append(append(append([]string{}, prefix...), bin), args...), "-c", sessionScript)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, work
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &liveSession{cmd: cmd, stdin: stdin, out: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.end(t) })
	ready := make(chan bool, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		ready <- line == "ready\n"
		_, _ = io.Copy(io.Discard, r)
	}()
	go func() { s.done <- cmd.Wait() }()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("the agent did not start: %s", s.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the agent did not start within 30s: %s", s.out)
	}
	// The control channel opens right after the agent's start: ps
	// answers from the socket.
	deadline := time.Now().Add(10 * time.Second)
	for s.id == "" {
		for _, i := range psJSON(t, bin, prefix, env, work) {
			if i.Workdir == work || filepath.Base(i.Workdir) == filepath.Base(work) {
				s.id = i.ID
			}
		}
		if s.id == "" && time.Now().After(deadline) {
			t.Fatalf("ps does not list the session: %s", s.out)
		}
	}
	return s
}

// end closes the agent's stdin and waits for the run's end.
func (s *liveSession) end(t *testing.T) error {
	if s.stdin != nil {
		s.stdin.Close()
		s.stdin = nil
	}
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("the session did not end once its agent was told to: %s", s.out)
		return errors.New("timeout")
	}
}

// execIn runs `agent-sandbox exec ID -- sh -c script` and returns its
// output and exit status.
func execIn(t *testing.T, bin string, prefix, env []string, dir, id, script string) (string, int) {
	t.Helper()
	argv := append(append(append([]string{}, prefix...), bin), "exec", id, "--", "sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestSessionExec: `agent-sandbox exec` starts a command inside a running
// session's view: it sees the session's files and network and nothing
// more (a credential, a host Unix socket, the host's loopback with the
// network blocked), its status comes back, and neither it nor the agent
// can reach the control socket; ps lists the session while it lives.
func TestSessionExec(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the socket probes")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-exec")
	env := sessionEnv(home)
	secret := filepath.Join(home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("SECRET-KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostSock := filepath.Join(home, "host.sock")
	ul, err := net.Listen("unix", hostSock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	port := tl.Addr().(*net.TCPAddr).Port

	s := startSession(t, bin, nil, env, work, "--offline")
	l := psJSON(t, bin, nil, env, work)
	if len(l) != 1 || l[0].Engine != "view" || l[0].Network != "blocked" || l[0].Agent != "run" || l[0].Processes != 1 {
		t.Errorf("ps --json = %+v, want one view session of run, network blocked, one process", l)
	}
	sessions := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions")
	control := filepath.Join(sessions, s.id, "control")
	checkControlSocket(t, control)

	out, code := execIn(t, bin, nil, env, work, s.id, "cat agent.txt; echo exec-file > exec.txt; exit 7")
	if code != 7 || !strings.Contains(out, "agent-file") {
		t.Errorf("exec: exit %d (want 7), output %q (want the agent's file)", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "exec.txt")); err != nil || string(b) != "exec-file\n" {
		t.Errorf("exec's write to the workdir: %q %v", b, err)
	}
	// By agent name too.
	if out, code := execIn(t, bin, nil, env, work, "run", "true"); code != 0 {
		t.Errorf("exec by agent name: exit %d: %s", code, out)
	}

	probe := fmt.Sprintf(`python3 - <<'EOF'
import socket, os, glob
got = []
try:
    open(%q).read(); got.append("credential")
except OSError:
    pass
for path in (%q, %q):
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(path); got.append("unix " + path)
    except OSError:
        pass
for path in glob.glob("/proc/*/root" + %q):
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(path); got.append("proc " + path)
    except OSError:
        pass
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect("\0" + %q); got.append("abstract")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2); got.append("host loopback")
except OSError:
    pass
if os.path.exists(%q): got.append("sessions dir visible")
print("GOT", got)
EOF`, secret, hostSock, control, control, control, port, sessions)
	out, code = execIn(t, bin, nil, env, work, s.id, probe)
	if code != 0 || !strings.Contains(out, "GOT []") {
		t.Errorf("exec reached what the session must not (exit %d): %s", code, out)
	}
	checkForgedRequest(t, control)

	if err := s.end(t); err != nil {
		t.Errorf("the session's run: %v: %s", err, s.out)
	}
	if l := psJSON(t, bin, nil, env, work); len(l) != 0 {
		t.Errorf("ps after the session's end: %+v", l)
	}
	if _, err := os.Stat(filepath.Join(sessions, s.id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the session's directory outlived it: %v", err)
	}
}

// TestSessionLastProcess: a session lasts while an exec'd process runs,
// after its agent ended: the run's status and its after-run checks come
// once, after the last process.
func TestSessionLastProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-last")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work)
	argv := []string{bin, "exec", s.id, "--", "sh", "-c", "read x; echo exec-was-here > late.txt; exit 4"}
	x := exec.Command(argv[0], argv[1:]...)
	x.Env, x.Dir = env, work
	xin, err := x.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	// The exec'd command runs once ps counts it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := psJSON(t, bin, nil, env, work)
		if len(l) == 1 && l[0].Processes == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ps never counted the exec'd process: %+v", l)
		}
	}
	s.stdin.Close()
	s.stdin = nil
	select {
	case err := <-s.done:
		t.Fatalf("the run ended (%v) while an exec'd process still ran: %s", err, s.out)
	case <-time.After(500 * time.Millisecond):
		// Control of the wait above: the agent was told to end; the run
		// must still be waiting for the exec'd process.
	}
	xin.Close()
	err = x.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 {
		t.Errorf("exec's status: %v, want exit 4", err)
	}
	if err := s.end(t); err != nil {
		t.Errorf("the run: %v: %s", err, s.out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "late.txt")); err != nil || string(b) != "exec-was-here\n" {
		t.Errorf("the exec'd process's write: %q %v", b, err)
	}
}

// TestSessionWeakerExec: the weaker sandbox has a session (ps lists it)
// whose exec is refused with the reason; `--read` of the sessions
// directory is refused on every engine.
func TestSessionWeakerExec(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	prefix := noUserns(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-weaker")
	env := sessionEnv(home, "AGENT_SANDBOX_WEAKER_SANDBOX=1")
	s := startSession(t, bin, prefix, env, work, "--sandbox-backend", "landlock", "--offline")
	l := psJSON(t, bin, prefix, env, work)
	if len(l) != 1 || l[0].Engine != "weaker" {
		t.Errorf("ps --json = %+v, want one weaker session", l)
	}
	out, code := execIn(t, bin, prefix, env, work, s.id, "cat agent.txt")
	if code != 125 || !strings.Contains(out, "not supported by this engine yet") || strings.Contains(out, "agent-file") {
		t.Errorf("exec in the weaker sandbox: exit %d, %q: want 125 and the reason", code, out)
	}
	// The agent cannot reach the control socket (no Unix sockets at
	// all in the weaker sandbox's seccomp filter).
	if err := s.end(t); err != nil {
		t.Errorf("the run: %v: %s", err, s.out)
	}
	for _, flag := range []string{"--read", "--write"} {
		argv := append(append([]string{}, prefix...), bin, "--sandbox-backend", "landlock", flag, filepath.Join(home, ".local", "state", "agent-sandbox", "sessions"), "run", "--", "true")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env, cmd.Dir = env, work
		out, _ := cmd.CombinedOutput()
		want := "control sockets"
		if flag == "--write" {
			want = "keeps policy or state"
		}
		if cmd.ProcessState.ExitCode() != 125 || !strings.Contains(string(out), want) {
			t.Errorf("%s of the sessions directory: exit %d: %s", flag, cmd.ProcessState.ExitCode(), out)
		}
	}
}

// TestSessionNono: under nono alone a session is listed by ps, exec and
// allow are refused with the reason; under nono inside the view exec is
// refused (it would lack nono's layer); and a nono-confined agent cannot
// use another session's control socket: it may be able to connect (a
// kernel whose Landlock cannot confine Unix sockets by path), but it
// cannot read the session's token, without which every request is
// refused.
func TestSessionNono(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the socket probe")
	}
	nonoOrSkip(t)
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	nonoFlags := []string{"--sandbox-backend", "nono"}
	env := sessionEnv(home, "PATH="+pathFor(nonoFlags))
	viewWork := homeTempDir(t, "session-nono-view")
	view := startSession(t, bin, nil, env, viewWork, "--offline")
	sessions := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions")
	control := filepath.Join(sessions, view.id, "control")
	token := filepath.Join(sessions, view.id, "token")

	work := homeTempDir(t, "session-nono")
	probe := fmt.Sprintf(`
import socket, json, struct
got = []
try:
    open(%q).read(); got.append("token")
except OSError:
    pass
try:
    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(%q)
    body = json.dumps({"v": 1, "token": "", "op": "info"}).encode()
    s.sendall(struct.pack(">I", len(body)) + body)
    r = s.recv(65536)
    if b'"info"' in r: got.append("info")
except OSError:
    pass
print("GOT", got)
`, token, control)
	// nono alone (no view: noUserns), where the agent may reach the
	// socket by path: inside the view the state root does not exist.
	alone := noUserns(t)
	argv := append(append(append(append([]string{}, alone...), bin), nonoFlags...), "--offline", "run", "--", "python3", "-c", probe)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = env, work
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "GOT []") {
		t.Errorf("a nono-confined agent reached a session's control channel (%v): %s", err, out)
	}

	engineOf := func(id string) string {
		for _, i := range psJSON(t, bin, nil, env, work) {
			if i.ID == id {
				return i.Engine
			}
		}
		return ""
	}
	s := startSession(t, bin, alone, env, work, append(nonoFlags, "--offline")...)
	if engine := engineOf(s.id); engine != "nono" {
		t.Errorf("ps: the nono-alone session's engine is %q", engine)
	}
	if out, code := execIn(t, bin, nil, env, work, s.id, "cat agent.txt"); code != 125 || !strings.Contains(out, "not supported by this engine yet") {
		t.Errorf("exec under nono alone: exit %d: %s", code, out)
	}
	a := exec.Command(bin, "allow", "--session", s.id, "example.com")
	a.Env, a.Dir = env, work
	if out, _ := a.CombinedOutput(); a.ProcessState.ExitCode() != 125 || !strings.Contains(string(out), "cannot change a running sandbox's network") {
		t.Errorf("allow under nono alone: exit %d: %s", a.ProcessState.ExitCode(), out)
	}
	if err := s.end(t); err != nil {
		t.Errorf("the nono-alone run: %v: %s", err, s.out)
	}

	// nono inside the view: listed as such; exec refused (init would
	// start the command without nono's own layer: wider than the agent).
	inView := startSession(t, bin, nil, env, work, append(nonoFlags, "--offline")...)
	if engine := engineOf(inView.id); engine != "nono-in-view" {
		t.Errorf("ps: the nono-in-view session's engine is %q", engine)
	}
	if out, code := execIn(t, bin, nil, env, work, inView.id, "cat agent.txt"); code != 125 || !strings.Contains(out, "not supported by this engine yet") || !strings.Contains(out, "nono's own Landlock layer") {
		t.Errorf("exec under nono inside the view: exit %d: %s", code, out)
	}
	if err := inView.end(t); err != nil {
		t.Errorf("the nono-in-view run: %v: %s", err, inView.out)
	}
	if err := view.end(t); err != nil {
		t.Errorf("the view run: %v: %s", err, view.out)
	}
}

// TestSessionAllow: `agent-sandbox allow` makes a refused host reachable
// in the running session (a loopback stand-in upstream on the host,
// forwarded as --allow-host localhost:PORT forwards it at the start), the
// addition is in `agent-sandbox log`, a metadata address is refused as in
// a folder's list, an offline session says it cannot, and the refusal
// line names the command.
func TestSessionAllow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl for the requests")
	}
	bin := buildAgentSandbox(t)
	up := newAPIStandIn(t)
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	home := t.TempDir()
	work := homeTempDir(t, "session-allow")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work, "--allow-host", fmt.Sprintf("localhost:%d", other.Addr().(*net.TCPAddr).Port))
	get := fmt.Sprintf("curl -sS --max-time 5 -o /dev/null -w '%%{http_code}' -X POST http://127.0.0.1:%d/v1/messages/count_tokens", up.port())
	if out, code := execIn(t, bin, nil, env, work, s.id, get); code == 0 || len(up.requests()) != 0 {
		t.Fatalf("control: the upstream was reachable before allow (exit %d): %s", code, out)
	}
	allow := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"allow"}, args...)...)
		cmd.Env, cmd.Dir = env, work
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := allow("--session", s.id, "169.254.169.254"); code != 125 || !strings.Contains(out, "metadata") {
		t.Errorf("allow of a metadata address: exit %d: %s", code, out)
	}
	entry := fmt.Sprintf("127.0.0.1:%d", up.port())
	if out, code := allow(entry); code != 0 || !strings.Contains(out, "allowed "+entry) {
		t.Fatalf("allow %s: exit %d: %s", entry, code, out)
	}
	if out, code := execIn(t, bin, nil, env, work, s.id, get); code != 0 || out != "200" || len(up.requests()) != 1 {
		t.Errorf("after allow: exit %d, %q, upstream got %v: want 200 and one request", code, out, up.requests())
	}
	if err := s.end(t); err != nil {
		t.Errorf("the run: %v: %s", err, s.out)
	}
	if !strings.Contains(s.out.String(), "agent-sandbox allow localhost:") {
		t.Errorf("the refusal line does not name agent-sandbox allow: %s", s.out)
	}
	lg := exec.Command(bin, "log", "run")
	lg.Env, lg.Dir = env, work
	out, _ := lg.CombinedOutput()
	if !strings.Contains(string(out), "added") || !strings.Contains(string(out), entry) {
		t.Errorf("agent-sandbox log does not show the addition: %s", out)
	}

	off := startSession(t, bin, nil, env, work, "--offline")
	if out, code := allow("--session", off.id, "example.com"); code != 125 || !strings.Contains(out, "blocked") {
		t.Errorf("allow in an offline session: exit %d: %s", code, out)
	}
}

// TestSessionAllowSave: allow --save writes the entry to the session's
// agent folder's sandbox/nono.json, after the running session got it.
func TestSessionAllowSave(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-save")
	folders := t.TempDir()
	folder := filepath.Join(folders, "svc")
	nonoJSON := filepath.Join(folder, "sandbox", "nono.json")
	if err := os.MkdirAll(filepath.Dir(nonoJSON), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "agent.toml"), []byte("command = \"sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nonoJSON, []byte(`{"network": {"allow_domain": ["api.example.com"]}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := sessionEnv(home, "AGENT_SANDBOX_PATH="+folders)
	s := startSessionOf(t, bin, nil, env, work, "--sandbox-backend", "landlock", "svc")
	cmd := exec.Command(bin, "allow", "--save", "--session", s.id, "other.example.com")
	cmd.Env, cmd.Dir = env, work
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "saved other.example.com to network.allow_domain of "+nonoJSON) {
		t.Errorf("allow --save: %v: %s", err, out)
	}
	b, _ := os.ReadFile(nonoJSON)
	var doc struct {
		Network struct {
			AllowDomain []string `json:"allow_domain"`
		} `json:"network"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || strings.Join(doc.Network.AllowDomain, ",") != "api.example.com,other.example.com" {
		t.Errorf("nono.json after --save: %s (%v)", b, err)
	}
	if err := s.end(t); err != nil {
		t.Errorf("the run: %v: %s", err, s.out)
	}
}

// checkControlSocket checks the modes of a session's socket and directory.
func checkControlSocket(t *testing.T, control string) {
	t.Helper()
	if fi, err := os.Stat(control); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("the control socket %s: %v %v, want a 0600 socket", control, fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(control)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the session directory: %v %v, want 0700", fi, err)
	}
}

// checkForgedRequest: the host reaches the control socket (the control of
// the probes that must not), and a request without the session's token
// is refused.
func checkForgedRequest(t *testing.T, control string) {
	t.Helper()
	c, err := net.Dial("unix", control)
	if err != nil {
		t.Fatalf("control: the host cannot connect to the control socket: %v", err)
	}
	defer c.Close()
	body := []byte(`{"v":1,"token":"forged","op":"exec","argv":["true"]}`)
	_, _ = c.Write(append([]byte{0, 0, 0, byte(len(body))}, body...))
	resp, _ := io.ReadAll(c)
	if !strings.Contains(string(resp), "not this session's token") {
		t.Errorf("a request without the token: %q, want a refusal", resp)
	}
}

// TestSessionExecOpenNetwork: with an open network the view shares the
// host's network namespace, abstract Unix sockets included: the control
// socket is bound to a path, which the view does not hold, so neither
// the agent nor an exec'd command reaches it.
func TestSessionExecOpenNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the socket probes")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-open")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work, "--network", "open")
	control := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions", s.id, "control")
	probe := fmt.Sprintf(`python3 - <<'EOF'
import socket
got = []
paths = [%q]
for line in open("/proc/net/unix").read().splitlines()[1:]:
    f = line.split()
    if len(f) > 7 and "/agent-sandbox/sessions/" in f[7]:
        paths.append(f[7])
for p in paths:
    for name in (p, "\0" + p):
        try:
            s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(name); got.append(repr(name))
        except OSError:
            pass
print("GOT", got, len(paths))
EOF`, control)
	out, code := execIn(t, bin, nil, env, work, s.id, probe)
	if code != 0 || !strings.Contains(out, "GOT []") {
		t.Errorf("an exec'd command in an open-network view reached the control socket (exit %d): %s", code, out)
	}
	// Control: the shared namespace lists the socket's path (so the
	// probe tried it by name and as an abstract name).
	if !regexp.MustCompile(`GOT \[\] ([2-9]|\d\d+)`).MatchString(out) {
		t.Errorf("control: /proc/net/unix in the open-network view does not list the control socket: %s", out)
	}
	checkForgedRequest(t, control)
	if err := s.end(t); err != nil {
		t.Errorf("the run: %v: %s", err, s.out)
	}
}

// TestSessionSignalAfterAgent: once the agent has ended and the session
// lasts for an exec'd command, SIGTERM to the run's agent-sandbox reaches
// that command (the user can still end the session), and exec reports
// how it ended.
func TestSessionSignalAfterAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "session-signal")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work)
	// The command sees the agent's end in the session's PID namespace
	// (the agent's command line is gone from /proc once init reaped it).
	script := `trap 'echo got-term; exit 9' TERM; echo exec-ready; read x
while grep -q 'agent-end[s]' /proc/[0-9]*/cmdline 2>/dev/null; do sleep 0.05; done
echo agent-gone; sleep 100 & wait`
	x := exec.Command(bin, "exec", s.id, "--", "sh", "-c", script)
	x.Env, x.Dir = env, work
	xin, err := x.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	xout, err := x.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(xout)
	if line, _ := r.ReadString('\n'); line != "exec-ready\n" {
		t.Fatalf("the exec'd command did not start: %q", line)
	}
	s.stdin.Close() // the agent ends; the session lasts
	s.stdin = nil
	xin.Close()
	if line, _ := r.ReadString('\n'); line != "agent-gone\n" {
		t.Fatalf("the exec'd command did not see the agent's end: %q", line)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = x.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 9 || !strings.Contains(string(rest), "got-term") {
		t.Errorf("the exec'd command after SIGTERM to the run: %v, %q; want it to get SIGTERM and exit 9", err, rest)
	}
	_ = s.end(t)
}
