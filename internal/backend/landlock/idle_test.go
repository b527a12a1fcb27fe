package landlock

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWatch: a started session ends once no exec'd process has run
// for its idle timeout, and not while one runs.
func TestIdleWatch(t *testing.T) {
	var running, looks atomic.Int32
	running.Store(1)
	ended := make(chan time.Time, 1)
	done := make(chan struct{})
	defer close(done)
	execs := func() int { looks.Add(1); return int(running.Load()) }
	go idleWatch(200*time.Millisecond, execs, func() { ended <- time.Now() }, done)
	// Until the watch has looked twice (a loaded machine may delay it
	// well past its tick), with a process running it must not end.
	for deadline := time.Now().Add(10 * time.Second); looks.Load() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never looked at the processes")
		}
	}
	select {
	case <-ended:
		t.Fatal("the session ended while an exec'd process ran")
	case <-time.After(300 * time.Millisecond):
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
