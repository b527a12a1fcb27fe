//go:build linux

package landlock

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
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
