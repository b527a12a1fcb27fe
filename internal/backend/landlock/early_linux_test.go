//go:build linux

package landlock

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/scope"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
	"github.com/agent-sandbox/agent-sandbox/internal/view"
)

// TestMain makes the test binary the sandbox init when it is started as
// one (the inits these tests spawn are /proc/self/exe).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == view.InitArg {
		os.Exit(view.Init())
	}
	os.Exit(m.Run())
}

// An init started before planning is taken over only by a run with the
// network mode it was started for; any other run ends it, and Abort after
// a take-over that never started anything ends it too.
func TestEarlyTake(t *testing.T) {
	if ok, why := viewExpected(); !ok {
		t.Skipf("needs unprivileged user namespaces: %s", why)
	}
	stdio := launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	pid := func(e *Early) int {
		t.Helper()
		<-e.done
		if e.err != nil {
			t.Fatal(e.err)
		}
		return e.pending.Pid()
	}
	gone := func(p int) bool { return errors.Is(unix.Kill(p, 0), unix.ESRCH) }

	e := Prestart(posture.NetOpen, stdio)
	p := pid(e)
	if got := e.take(Net{Mode: posture.NetBlocked}); got != nil {
		t.Errorf("an init with the host's network was handed to an offline run")
	}
	if !gone(p) {
		t.Errorf("the init of the wrong network mode was not ended")
	}
	e.Abort() // a second end does nothing

	e = Prestart(posture.NetBlocked, stdio)
	p = pid(e)
	if got := e.take(Net{Mode: posture.NetBlocked}); got != e {
		t.Fatalf("the init was not handed to a run with its network mode")
	}
	if gone(p) {
		t.Errorf("the init handed over was ended")
	}
	e.Abort()
	if !gone(p) {
		t.Errorf("Abort left the unstarted init %d", p)
	}
	var none *Early
	none.Abort()
	if none.take(Net{}) != nil {
		t.Errorf("a nil Early handed something over")
	}
}

// The run's scope is asked for with the early init's pid, once, beside
// the preparation; a refusal from it ends init before it is sent its
// configuration, and a run with a fresh init attaches that one instead.
func TestEarlyScope(t *testing.T) {
	if ok, why := viewExpected(); !ok {
		t.Skipf("needs unprivileged user namespaces: %s", why)
	}
	var asked []int
	refuse := errors.New("refused by the test")
	defer func(f func(spec.Spec, int) error) { attachScope = f }(attachScope)
	defer func(f func() (*scope.Manager, error)) { findScope = f }(findScope)
	findScope = func() (*scope.Manager, error) { return &scope.Manager{}, nil } // a manager was found
	attachScope = func(_ spec.Spec, pid int) error {
		asked = append(asked, pid)
		return refuse
	}
	stdio := launch.Stdio{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	s := spec.Spec{AgentDir: "/f/a", MemoryMax: 1 << 30}

	e := Prestart(posture.NetOpen, stdio)
	r := startScope(s, e)
	<-r.done
	if len(asked) != 1 || asked[0] != e.pid || e.pid == 0 {
		t.Fatalf("the scope was asked for pids %v, want init's (%d) once", asked, e.pid)
	}
	var errw bytes.Buffer
	_, err := e.start(&exec.Cmd{}, view.Config{}, r.check(&errw))
	if err == nil || !strings.Contains(err.Error(), `/f/a/agent.toml: memory_max = "1G" cannot be applied: refused by the test`) {
		t.Errorf("start with a refused scope: %v", err)
	}
	if len(asked) != 1 {
		t.Errorf("the scope was asked for again: %v", asked)
	}
	if !errors.Is(unix.Kill(e.pid, 0), unix.ESRCH) {
		t.Errorf("the init was not ended after the scope's refusal")
	}
	e.Abort()

	// No early init: the fresh one is attached at start.
	r = startScope(s, nil)
	<-r.done
	if r.pid != 0 {
		t.Errorf("a scope without an early init was for pid %d", r.pid)
	}
	asked = nil
	if err := r.check(&errw)(4242); err == nil || len(asked) != 1 || asked[0] != 4242 {
		t.Errorf("a fresh init was not attached at start: %v, %v", asked, err)
	}

	// The default bound: a manager's refusal warns, and the run goes on.
	errw.Reset()
	r = startScope(spec.Spec{}, nil)
	<-r.done
	if err := r.check(&errw)(4243); err != nil || !strings.Contains(errw.String(), "the run has no memory bound: refused by the test") {
		t.Errorf("the default bound refused: %v, %q", err, errw.String())
	}
	if startScope(spec.Spec{MemoryMax: spec.NoMemoryLimit}, nil) != nil {
		t.Errorf(`memory_max = "none" asked for a scope`)
	}

	// No user manager: nothing is asked (the default bound is left out).
	findScope = func() (*scope.Manager, error) { return nil, errors.New("no manager in the test") }
	asked = nil
	if r := startScope(spec.Spec{}, nil); r != nil || len(asked) != 0 {
		t.Errorf("a scope was asked for where no user manager runs: %v, %v", r, asked)
	}
}
