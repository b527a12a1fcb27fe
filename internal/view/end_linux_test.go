//go:build linux

package view

import "testing"

// TestHeldSession: a session with no agent (Config.NoAgent) is not over
// while it is held, even with no exec'd process; once released (an end
// asked) it is over when its last exec'd process has ended, and takes no
// more execs.
func TestHeldSession(t *testing.T) {
	session.Lock()
	live, done, held, over := session.live, session.agentDone, session.held, session.over
	session.live = map[int]bool{}
	session.agentDone, session.held, session.over = true, true, false
	session.Unlock()
	t.Cleanup(func() {
		session.Lock()
		session.live, session.agentDone, session.held, session.over = live, done, held, over
		session.Unlock()
	})
	if _, over := sessionOver(); over {
		t.Fatal("a held session with no process is over")
	}
	session.Lock()
	session.live[42] = true
	session.held = false // as endSessionAfter, without its signals
	session.over = true
	session.Unlock()
	if _, over := sessionOver(); over {
		t.Fatal("the session is over while an exec'd process runs")
	}
	if _, err := startExec([]string{"/bin/true"}, []int{0, 1, 2}, false); err == nil {
		t.Fatal("an exec was started after the end was asked")
	}
	execExited(42, 0)
	if _, over := sessionOver(); !over {
		t.Fatal("the session is not over after its last process ended")
	}
}
