package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startedSession is a session `agent-sandbox start` started, with no
// agent process.
type startedSession struct {
	id  string
	pid int // its supervisor's host pid
}

// startedRun runs agent-sandbox with args in dir and returns its stdout,
// stderr and exit status.
func startedRun(t *testing.T, bin string, env []string, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("agent-sandbox %s did not return in 3 minutes (a hang): %s %s", strings.Join(args, " "), out.String(), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// startSessionDetached runs `agent-sandbox start --json ARGS` in work and
// returns the session; t.Cleanup stops it (and checks that its supervisor
// is gone) if the test did not.
func startSessionDetached(t *testing.T, bin string, env []string, work string, args ...string) startedSession {
	t.Helper()
	out, errOut, code := startedRun(t, bin, env, work, append([]string{"start", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("start: exit %d: %s%s", code, out, errOut)
	}
	var info struct {
		ID       string `json:"id"`
		Pid      int    `json:"pid"`
		Engine   string `json:"engine"`
		Detached bool   `json:"detached"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.ID == "" || info.Pid <= 0 {
		t.Fatalf("start --json printed %q (%v); stderr %s", out, err, errOut)
	}
	if info.Engine != "view" || !info.Detached {
		t.Errorf("start --json: engine %q detached %v, want a detached view session", info.Engine, info.Detached)
	}
	s := startedSession{id: info.ID, pid: info.Pid}
	t.Cleanup(func() {
		if syscall.Kill(s.pid, 0) != nil {
			return
		}
		_, _, _ = startedRun(t, bin, env, work, "stop", s.id)
		if !gone(s.pid, 30*time.Second) {
			_ = syscall.Kill(s.pid, syscall.SIGKILL)
			t.Errorf("session %s's supervisor (pid %d) outlived the test's stop", s.id, s.pid)
		}
	})
	return s
}

// gone waits up to d for pid to be gone (or a zombie).
func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// startedFixture is a home with codex's configuration, a copy of the
// built-in codex folder whose command is /bin/sh, and a git workdir.
func startedFixture(t *testing.T, bin, prefix string) (home, work, folder string, env []string) {
	t.Helper()
	home = t.TempDir()
	work = homeTempDir(t, prefix)
	env = sessionEnv(home)
	write(t, filepath.Join(home, ".codex", "config.toml"), "model = \"o3\"\n")
	folder = filepath.Join(home, "agents", "codex")
	if out, errOut, code := startedRun(t, bin, env, work, "agents", "copy", "codex", folder); code != 0 {
		t.Fatalf("agents copy codex: %s%s", out, errOut)
	}
	p := filepath.Join(folder, "agent.toml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `command = "codex"`, `command = "/bin/sh"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, ".git", "config"), "[core]\n\tbare = false\n")
	return home, work, folder, env
}

// plantScript is what the exec'd command does: a file in the workdir, a
// code-running key in codex's configuration (writable, audited: restored
// at the end), and core.fsmonitor in .git/config (read-only in the view).
func plantScript(home string) string {
	return `echo exec-file > exec.txt
printf 'notify = ["touch", "` + home + `/PWNED"]\n' >> ` + home + `/.codex/config.toml
printf '\tfsmonitor = "touch ` + home + `/PWNED"\n' >> .git/config 2>/dev/null && echo GITCONFIG-WRITTEN
true`
}

// checkPlantUndone checks that the exec'd command's file stays and its
// plants do not.
func checkPlantUndone(t *testing.T, home, work, out string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(work, "exec.txt")); err != nil || string(b) != "exec-file\n" {
		t.Errorf("the exec'd command's file in the workdir: %q %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); strings.Contains(string(b), "notify") {
		t.Errorf("codex's notify planted through exec survived the session's end:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(work, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("core.fsmonitor planted through exec survived:\n%s", b)
	}
	if !strings.Contains(out, "that run code") || !strings.Contains(out, ".codex/config.toml") {
		t.Errorf("the session's findings do not name the restored codex configuration:\n%s", out)
	}
}

// startRunning starts `agent-sandbox exec ID -- sh -c SCRIPT` for each
// script, in the background, and returns once ps counts them all; each
// channel gets its exit status.
func startRunning(t *testing.T, bin string, env []string, work, id string, scripts map[string]string) map[string]chan int {
	t.Helper()
	running := map[string]chan int{}
	for name, script := range scripts {
		cmd := exec.Command(bin, "exec", id, "--", "sh", "-c", script)
		cmd.Env, cmd.Dir = env, work
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ch := make(chan int, 1)
		running[name] = ch
		go func() { _ = cmd.Wait(); ch <- cmd.ProcessState.ExitCode() }()
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if l := psJSON(t, bin, nil, env, work); len(l) == 1 && l[0].Processes >= len(scripts) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return running
}

// childrenOf lists pid's children.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if k, err := strconv.Atoi(f); err == nil {
				out = append(out, k)
			}
		}
	}
	return out
}

// checkDetached checks that the supervisor pid runs in a session of its
// own (not the caller's) with no controlling terminal.
func checkDetached(t *testing.T, pid int) {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	mySid, _ := unix.Getsid(0)
	if sid, _ := strconv.Atoi(f[3]); sid != pid || sid == mySid {
		t.Errorf("the supervisor's session id is %d (the caller's %d), want its own (%d)", sid, mySid, pid)
	}
	if f[4] != "0" {
		t.Errorf("the supervisor has a controlling terminal (tty_nr %s)", f[4])
	}
}

// TestStartStop: `agent-sandbox start` starts a session with no agent
// process, its supervisor detached (a session of its own, no controlling
// terminal); exec runs commands in it; `stop` ends it, waits for its end
// and prints its after-run findings (the restore of a code-running key
// an exec'd command planted); ps no longer lists it, and nothing of it is
// left.
func TestStartStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	skipWithoutLandlock(t)
	bin := buildAgentSandbox(t)
	home, work, folder, env := startedFixture(t, bin, "start-stop")
	s := startSessionDetached(t, bin, env, work, "--offline", folder)

	checkDetached(t, s.pid)
	l := psJSON(t, bin, nil, env, work)
	if len(l) != 1 || l[0].ID != s.id || l[0].Processes != 0 {
		t.Errorf("ps --json = %+v, want session %s with no process", l, s.id)
	}

	out, code := execIn(t, bin, nil, env, work, s.id, plantScript(home))
	if code != 0 || strings.Contains(out, "GITCONFIG-WRITTEN") {
		t.Errorf("exec: exit %d: %s (.git/config must be read-only in the view)", code, out)
	}
	// The session lasts with no process: a second exec, by agent name.
	if out, code := execIn(t, bin, nil, env, work, "codex", "cat exec.txt"); code != 0 || out != "exec-file\n" {
		t.Errorf("a second exec by agent name: exit %d: %q", code, out)
	}

	// Two commands still run at the stop: one ends on its SIGTERM, the
	// other ignores it and is killed after the grace period.
	running := startRunning(t, bin, env, work, s.id, map[string]string{"term": "exec sleep 300", "ignores": "trap '' TERM; sleep 300; echo survived"})

	kids := childrenOf(s.pid) // the view's init
	if len(kids) == 0 {
		t.Errorf("the supervisor (pid %d) has no child: where is the sandbox's init?", s.pid)
	}
	stdout, stderr, code := startedRun(t, bin, env, work, "stop", s.id)
	if code != 0 {
		t.Errorf("stop: exit %d: %s%s", code, stdout, stderr)
	}
	for _, k := range kids {
		if !gone(k, 30*time.Second) {
			t.Errorf("the supervisor's child %d (the sandbox's init) outlived the session", k)
		}
	}
	for name, want := range map[string]int{"term": 128 + 15, "ignores": 128 + 9} {
		select {
		case got := <-running[name]:
			if got != want {
				t.Errorf("exec'd %s: exit %d after stop, want %d", name, got, want)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("exec'd %s still runs 30s after stop returned", name)
		}
	}
	checkPlantUndone(t, home, work, stderr)
	if !gone(s.pid, 5*time.Second) {
		t.Errorf("the supervisor (pid %d) still runs after stop returned", s.pid)
	}
	if l := psJSON(t, bin, nil, env, work); len(l) != 0 {
		t.Errorf("ps lists sessions after stop: %+v", l)
	}
	sessions := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions")
	left, _ := os.ReadDir(sessions)
	for _, e := range left {
		t.Errorf("left in the sessions directory after stop: %s", e.Name())
	}
	// Stopped once: a second stop says the session is gone.
	if _, stderr, code := startedRun(t, bin, env, work, "stop", s.id); code != 125 || !strings.Contains(stderr, "no live session") {
		t.Errorf("a second stop: exit %d: %s", code, stderr)
	}
}

// TestStartIdle: a started session with no exec'd process ends by itself
// after its idle timeout; its findings are kept (outside every grant) and
// printed once by the next ps in its workdir.
func TestStartIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	skipWithoutLandlock(t)
	bin := buildAgentSandbox(t)
	home, work, folder, env := startedFixture(t, bin, "start-idle")
	// The exec'd command keeps the session past its 2s idle timeout (it
	// sleeps 3s); the session ends 2s after it. On a loaded machine the
	// first exec may come after the timeout: the session is started
	// again then (up to three times).
	var s startedSession
	for attempt := 1; ; attempt++ {
		s = startSessionDetached(t, bin, env, work, "--offline", "--idle-timeout", "2s", folder)
		out, code := execIn(t, bin, nil, env, work, s.id, plantScript(home)+"\nsleep 3")
		if code == 0 {
			break
		}
		if attempt == 3 || !strings.Contains(out, "ending") && !strings.Contains(out, "no live session") && !strings.Contains(out, "has ended") {
			t.Fatalf("exec: exit %d: %s", code, out)
		}
		t.Logf("attempt %d: the exec came after the idle timeout (a loaded machine): %s", attempt, out)
		gone(s.pid, time.Minute)
		os.Remove(filepath.Join(home, ".local", "state", "agent-sandbox", "sessions", s.id+".findings.json"))
	}
	if !gone(s.pid, 2*time.Minute) {
		t.Fatalf("the session did not end on its 2s idle timeout")
	}
	findings := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions", s.id+".findings.json")
	if _, err := os.Stat(findings); err != nil {
		t.Fatalf("the idle session kept no findings: %v", err)
	}
	stdout, stderr, code := startedRun(t, bin, env, work, "ps")
	if code != 0 || !strings.Contains(stdout, "no live sessions") {
		t.Errorf("ps: exit %d: %s", code, stdout)
	}
	if !strings.Contains(stderr, "session "+s.id) || !strings.Contains(stderr, "ended on its idle timeout") {
		t.Errorf("ps does not say the session ended on its idle timeout:\n%s", stderr)
	}
	checkPlantUndone(t, home, work, stderr)
	if _, err := os.Stat(findings); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the findings outlived their printing: %v", err)
	}
	if _, stderr, _ := startedRun(t, bin, env, work, "ps"); strings.Contains(stderr, s.id) {
		t.Errorf("a second ps printed the findings again:\n%s", stderr)
	}

	// The next run in the workdir prints them too (once), before its
	// agent starts.
	s2 := startSessionDetached(t, bin, env, work, "--offline", "--idle-timeout", "1s", folder)
	if !gone(s2.pid, 2*time.Minute) {
		t.Fatalf("the second session did not end on its 1s idle timeout")
	}
	_, stderr, code = startedRun(t, bin, env, work, "--offline", "--sandbox-backend", "landlock", "run", "--", "true")
	if code != 0 || !strings.Contains(stderr, "session "+s2.id) || !strings.Contains(stderr, "nothing to report") {
		t.Errorf("the next run: exit %d, did not print the idle session's findings:\n%s", code, stderr)
	}
	if _, stderr, _ := startedRun(t, bin, env, work, "--offline", "--sandbox-backend", "landlock", "run", "--", "true"); strings.Contains(stderr, s2.id) {
		t.Errorf("a second run printed the findings again:\n%s", stderr)
	}
}

// TestStopAgentSession: stop ends a session whose agent runs (a run,
// not a start), as a SIGTERM to its agent-sandbox would: the agent gets
// SIGTERM, the run ends with its status and prints its findings where it
// runs; stop waits for that end and says where they went.
func TestStopAgentSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	skipWithoutLandlock(t)
	bin := buildAgentSandbox(t)
	home := t.TempDir()
	work := homeTempDir(t, "stop-agent")
	env := sessionEnv(home)
	s := startSession(t, bin, nil, env, work, "--offline")
	stdout, stderr, code := startedRun(t, bin, env, work, "stop", s.id)
	if code != 0 || !strings.Contains(stderr, "session "+s.id+" (run) ended; its run printed its findings where it ran") {
		t.Errorf("stop: exit %d: %s%s", code, stdout, stderr)
	}
	// stop returned after the run's end.
	if !gone(s.cmd.Process.Pid, time.Second) {
		t.Error("stop returned before the run it stopped had ended")
	}
	var ee *exec.ExitError
	if err := s.end(t); !errors.As(err, &ee) || ee.ExitCode() != 128+15 {
		t.Errorf("the stopped run: %v, want exit 143 (its agent's SIGTERM): %s", err, s.out)
	}
	if l := psJSON(t, bin, nil, env, work); len(l) != 0 {
		t.Errorf("ps lists sessions after stop: %+v", l)
	}
}

// TestStartRefused: only the namespace view runs a started session. The
// weaker sandbox (a host without user namespaces, opted in), such a host
// without the opt-in, and nono inside the view refuse with the reason
// (exec's), exit 125, and leave no session, log or process behind.
func TestStartRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary; skipped with -short")
	}
	skipWithoutLandlock(t)
	bin := buildAgentSandbox(t)
	prefix := noUserns(t)
	home := t.TempDir()
	work := homeTempDir(t, "start-refused")
	type row struct {
		name   string
		prefix []string
		env    []string
		flags  []string
		want   string
	}
	rows := []row{
		{"weaker", prefix, sessionEnv(home, "AGENT_SANDBOX_WEAKER_SANDBOX=1"), []string{"--sandbox-backend", "landlock"}, "start: exec: not supported by this engine yet (the weaker sandbox)"},
		{"no view", prefix, sessionEnv(home), nil, "user namespaces"},
	}
	if _, why, _ := nonoBinary(); why == "" {
		nonoFlags := []string{"--sandbox-backend", "nono"}
		rows = append(rows, row{"nono in view", nil, sessionEnv(home, "PATH="+pathFor(nonoFlags)), nonoFlags, "start: exec: not supported by this engine yet (nono inside the namespace view)"})
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			argv := append(append(append([]string{}, r.prefix...), bin, "start", "--offline"), r.flags...)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env, cmd.Dir = r.env, work
			out, _ := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(string(out), r.want) {
				t.Errorf("start: exit %d, want 125 and %q: %s", code, r.want, out)
			}
			sessions := filepath.Join(home, ".local", "state", "agent-sandbox", "sessions")
			left, _ := os.ReadDir(sessions)
			for _, e := range left {
				t.Errorf("left in the sessions directory: %s", e.Name())
			}
		})
	}
}
