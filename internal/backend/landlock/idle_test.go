package landlock

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWatch: a started session ends once no exec'd process has run
// for its idle timeout, and not while one runs.
func TestIdleWatch(t *testing.T) {
	var running atomic.Int32
	running.Store(1)
	ended := make(chan time.Time, 1)
	done := make(chan struct{})
	defer close(done)
	go idleWatch(200*time.Millisecond, func() int { return int(running.Load()) }, func() { ended <- time.Now() }, done)
	select {
	case <-ended:
		t.Fatal("the session ended while an exec'd process ran")
	case <-time.After(500 * time.Millisecond):
	}
	idle := time.Now()
	running.Store(0)
	select {
	case at := <-ended:
		if at.Sub(idle) < 200*time.Millisecond {
			t.Errorf("ended %v after the last process, before its idle timeout", at.Sub(idle))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the idle session did not end")
	}
	// Closing done stops the watch.
	stop := make(chan struct{})
	go idleWatch(50*time.Millisecond, func() int { return 0 }, func() { ended <- time.Now() }, stop)
	close(stop)
	select {
	case <-ended:
		t.Error("a stopped watch ended the session")
	case <-time.After(200 * time.Millisecond):
	}
}
