package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The quiesce step (issue 38, item 1): nothing after the agent runs until
// the agent is gone. The attacker's process outlives the agent (setsid,
// stdio detached) and blocks on inotify over .git: the moment the final
// audit restores .git/config, it plants core.fsmonitor again. Under the
// weaker sandbox and nono alone the audit ran before the leftovers were
// killed, and the restore was undone within microseconds.

// replanter is a Python program that blocks on inotify over the git dir
// argv[1] and appends core.fsmonitor (touching argv[2]) to its config
// whenever it lacks one. It plants once at start, then writes "r" to its
// stdout and detaches from it (the agent waits for that byte). argv[3] is
// a marker the test finds it by. argv[4] is the agent's pid: the moment
// the agent has ended (its pidfd, an event) it creates the file argv[5],
// the proof from inside that it outlived the agent, armed, and so that
// the attack happened.
const replanter = `import ctypes, os, select, sys
libc = ctypes.CDLL(None, use_errno=True)
git, pwned, agent, outlived = sys.argv[1], sys.argv[2], int(sys.argv[4]), sys.argv[5]
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, git.encode(), 0x2 | 0x4 | 0x8 | 0x80 | 0x100 | 0x200) < 0:
    sys.exit("inotify: %d" % ctypes.get_errno())
pidfd = os.pidfd_open(agent)
cfg = os.path.join(git, "config")
line = '[core]\n\tfsmonitor = "touch %s; false"\n' % pwned
def plant():
    try:
        with open(cfg) as f:
            if "fsmonitor" in f.read():
                return
        with open(cfg, "a") as f:
            f.write(line)
    except OSError:
        pass
plant()
os.write(1, b"r")
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 1)
buf = ctypes.create_string_buffer(65536)
while True:
    try:
        ready = select.select([fd] + ([pidfd] if pidfd is not None else []), [], [])[0]
    except InterruptedError:
        continue
    if pidfd is not None and pidfd in ready:
        os.close(pidfd)
        pidfd = None
        try:
            open(outlived, "w").close()
        except OSError:
            pass
    if fd in ready:
        if libc.read(fd, buf, 65536) < 0 and ctypes.get_errno() != 4:
            sys.exit(1)
        plant()
`

// quiesceEngines are the engines the rows run under: the weaker sandbox
// and nono alone (both through noUserns: where the view can be built, a
// nono run is nono inside the view, whose init reports the agent gone and
// binds the protected files read-only), each with its argv prefix, flags
// and environment; a missing one skips saying why.
func quiesceEngines(t *testing.T) map[string]func(t *testing.T) (prefix, flags, env []string) {
	return map[string]func(t *testing.T) ([]string, []string, []string){
		"weaker": func(t *testing.T) ([]string, []string, []string) {
			skipWithoutLandlock(t)
			return noUserns(t), []string{"--sandbox-backend", "landlock"}, []string{"AGENT_SANDBOX_WEAKER_SANDBOX=1"}
		},
		"nono-alone": func(t *testing.T) ([]string, []string, []string) {
			skipWithoutNono(t)
			return noUserns(t), []string{"--sandbox-backend", "nono"}, nil
		},
	}
}

// startIn starts `PREFIX agent-sandbox ARGS...` in the run's home and
// workdir.
func (r *brokerRun) startIn(timeout time.Duration, prefix, env []string, args ...string) *liveRun {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	argv := append(append(append([]string(nil), prefix...), r.bin), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.work
	cmd.Env = withCover(append([]string{"HOME=" + r.home, "PATH=" + pathFor(args), "LANG=C.UTF-8", "TERM=dumb"}, env...))
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		r.t.Fatal(err)
	}
	l := &liveRun{t: r.t, cmd: cmd, out: out, cancel: cancel, done: make(chan error, 1)}
	go func() { l.done <- cmd.Wait() }()
	r.t.Cleanup(func() {
		cancel()
		<-l.done
	})
	return l
}

// plantReplanter is the agent's script: start the re-planter detached, wait
// until it has planted and watches, and exit. The re-planter creates
// outlived once the agent has ended.
func plantReplanter(r *brokerRun, marker string) (script, pwned, outlived string) {
	prog := filepath.Join(r.work, "replant.py")
	write(r.t, prog, replanter)
	pwned = filepath.Join(filepath.Dir(r.home), "PWNED")
	outlived = filepath.Join(r.work, "replanter-outlived-the-agent")
	script = fmt.Sprintf(`{ setsid python3 %s %s %s %s $$ %s </dev/null 2>/dev/null & } | head -c1 >/dev/null; exit 0`,
		prog, filepath.Join(r.work, ".git"), pwned, marker, outlived)
	return script, pwned, outlived
}

// TestGuardQuiesceReplanter: under the weaker sandbox and nono alone, an
// inotify-driven re-planter the agent leaves running is ended before the
// final audit, 20 runs in a row (AGENT_SANDBOX_E2E_QUIESCE_RUNS): after
// each run the host's .git/config has no core.fsmonitor and the host's
// git status runs nothing. Control: the re-planter did plant (the run's
// audit restored .git/config). The attack is a race with the run's end:
// the re-planter reports from inside when it outlived the agent, armed
// (it saw the agent's pidfd end), and the row fails when that happened
// in none of the runs, logging in how many it did.
func TestGuardQuiesceReplanter(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the inotify re-planter")
	}
	runs := 20
	if n := os.Getenv("AGENT_SANDBOX_E2E_QUIESCE_RUNS"); n != "" {
		fmt.Sscan(n, &runs)
	}
	for name, engine := range quiesceEngines(t) {
		t.Run(name, func(t *testing.T) {
			prefix, flags, env := engine(t)
			armed, made := 0, 0
			defer func() {
				t.Logf("the re-planter outlived the agent, armed, in %d of %d runs", armed, made)
				if armed == 0 && !t.Failed() {
					t.Errorf("the re-planter outlived the agent in none of %d runs: the attack (a re-planter still watching when the run ends) never happened, the row proves nothing", made)
				}
			}()
			// When the re-planter outlived the agent in none of the runs
			// asked for, up to twice as many again are made for it to.
			for i := 0; i < runs || (armed == 0 && i < 3*runs); i++ {
				r := newBrokerRun(t)
				gitRepoCommitted(t, r.work)
				marker := fmt.Sprintf("replant-%d-%d-%s", os.Getpid(), i, name)
				script, pwned, outlived := plantReplanter(r, marker)
				l := r.startIn(60*time.Second, prefix, env, append(flags, r.folder(), "-c", script)...)
				code, out := l.wait()
				left := len(markerProcesses(marker))
				killMarked(marker)
				if code != 0 {
					t.Fatalf("run %d: exit %d: %s", i, code, out)
				}
				cfg, _ := os.ReadFile(filepath.Join(r.work, ".git", "config"))
				if !strings.Contains(out, "settings of "+filepath.Join(r.work, ".git", "config")) {
					t.Fatalf("run %d: control: the audit did not find the planted core.fsmonitor, so the row proves nothing:\n%s", i, out)
				}
				if strings.Contains(string(cfg), "fsmonitor") {
					t.Fatalf("run %d: the re-planter the agent left running planted core.fsmonitor again after the audit (the audit said it restored it):\n%s\n%s", i, cfg, out)
				}
				if left > 0 {
					t.Fatalf("run %d: %d process(es) of the run outlived it", i, left)
				}
				made++
				if exists(outlived) {
					armed++
				}
				hostGit(r.work, r.home, "status")
				if exists(pwned) {
					t.Fatalf("run %d: the host's git status ran the planted command", i)
				}
				if strings.Contains(out, "not final") {
					t.Fatalf("run %d: the audit says it is not final:\n%s", i, out)
				}
			}
		})
	}
}

// TestGuardKilledSupervisor: agent-sandbox is killed (SIGKILL) while the
// agent runs, and a process the agent left plants core.fsmonitor after
// that, when no audit can follow. The next start in that workdir audits
// the unfinished run first, restores .git/config, and says so.
func TestGuardKilledSupervisor(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3 for the inotify re-planter")
	}
	for name, engine := range quiesceEngines(t) {
		t.Run(name, func(t *testing.T) {
			prefix, flags, env := engine(t)
			r := newBrokerRun(t)
			gitRepoCommitted(t, r.work)
			marker := fmt.Sprintf("replant-killed-%d-%s", os.Getpid(), name)
			t.Cleanup(func() { killMarked(marker) })
			prog := filepath.Join(r.work, "late.py")
			trigger, planted := filepath.Join(r.work, "trigger"), filepath.Join(r.work, "planted")
			pwned := filepath.Join(filepath.Dir(r.home), "PWNED")
			// It waits for a byte on the trigger FIFO (opened before it
			// says it runs, so the test's write finds a reader), then
			// plants and says so.
			if err := syscall.Mkfifo(trigger, 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chmod(trigger, 0o666)
			write(t, prog, fmt.Sprintf(`import os, sys, time
trig = os.open(%[1]q, os.O_RDWR)
os.write(1, b"r"); os.dup2(os.open(os.devnull, os.O_RDWR), 1)
os.read(trig, 1)
with open(%[2]q, "a") as f: f.write('[core]\n\tfsmonitor = "touch %[3]s; false"\n')
open(%[4]q, "w").close()
time.sleep(600)
`, trigger, filepath.Join(r.work, ".git", "config"), pwned, planted))
			ready := filepath.Join(r.work, "ready")
			script := fmt.Sprintf(`{ setsid python3 %[1]s %[2]s </dev/null 2>/dev/null & } | head -c1 >/dev/null; : > %[3]s; exec python3 -c "import time; time.sleep(600)" %[2]s`, prog, marker, ready)
			l := r.startIn(60*time.Second, prefix, env, append(flags, r.folder(), "-c", script)...)
			waitPath(t, ready, 30*time.Second)
			l.cmd.Process.Signal(syscall.SIGKILL)
			f, err := os.OpenFile(trigger, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatalf("the late process does not hold the trigger FIFO open (it is gone?): %v", err)
			}
			f.Write([]byte{1})
			f.Close()
			waitPath(t, planted, 30*time.Second)
			// The agent itself may outlive agent-sandbox too, holding
			// its output open.
			killMarked(marker)
			l.wait()
			if cfg, _ := os.ReadFile(filepath.Join(r.work, ".git", "config")); !strings.Contains(string(cfg), "fsmonitor") {
				t.Fatalf("control: the late process did not plant:\n%s", cfg)
			}
			code, out := r.startIn(60*time.Second, prefix, env, append(flags, r.folder(), "-c", "true")...).wait()
			if code != 0 {
				t.Fatalf("the next run: exit %d: %s", code, out)
			}
			cfg, _ := os.ReadFile(filepath.Join(r.work, ".git", "config"))
			if strings.Contains(string(cfg), "fsmonitor") {
				t.Fatalf("the next start did not audit the run whose agent-sandbox was killed: core.fsmonitor is still in .git/config:\n%s\n%s", cfg, out)
			}
			if !strings.Contains(out, "ended without its final audit") {
				t.Errorf("the next start restored it without telling the user:\n%s", out)
			}
			hostGit(r.work, r.home, "status")
			if exists(pwned) {
				t.Errorf("the host's git status ran the planted command")
			}
		})
	}
}
