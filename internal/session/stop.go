package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// stop serves a "stop" request.
func (s *Server) stop(c *net.UnixConn) {
	// The session may end before the answer is written: Close leaves
	// this connection to it, as an exec's.
	s.mu.Lock()
	s.live[c] = true
	s.mu.Unlock()
	stop := s.h.Stop
	if stop == nil {
		// As a kill of the supervisor: it passes SIGTERM on to the
		// agent (and the sandbox's processes), as it would Ctrl-C's
		// SIGINT from a terminal it has not.
		stop = func() error { return unix.Kill(os.Getpid(), unix.SIGTERM) }
	}
	if err := stop(); err != nil {
		_ = writeFrame(c, Response{V: Version, Error: err.Error()}, nil)
		return
	}
	_ = writeFrame(c, Response{V: Version, Note: "ending"}, nil)
}

// Stop asks the session to end; it returns once the session has taken
// the request (Wait waits for its end).
func (c *Client) Stop() error {
	_, err := c.call(Request{Op: "stop"})
	return err
}

// Wait returns once the process pid (a session's supervisor, Info.Pid)
// has exited, or after timeout (false).
func Wait(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	if waitPidfd(pid, deadline) {
		return true
	}
	for time.Now().Before(deadline) {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// LogPath is where the supervisor of the detached session id writes its
// output (its standard output and error): in the sessions directory,
// outside every grant.
func LogPath(stateRoot, id string) string { return filepath.Join(Dir(stateRoot), id+".log") }

// FindingsPath is where the supervisor of the detached session id keeps
// its findings (Findings, JSON) once it has ended.
func FindingsPath(stateRoot, id string) string {
	return filepath.Join(Dir(stateRoot), id+".findings.json")
}

// Findings are what a detached session printed after it started: the
// warnings of its run and its after-run findings (restores, the
// protections' report), exactly as a run prints them.
type Findings struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent"`
	Workdir string    `json:"workdir"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Reason is why it ended: "stop" (agent-sandbox stop), "idle" (its
	// idle timeout), or "ended" (its supervisor was signalled, or the
	// sandbox ended by itself).
	Reason string `json:"reason"`
	// Code is the supervisor's exit status (0, or 128+N when an
	// interrupt cut its checks short, 125 when it failed).
	Code int `json:"code"`
	// Text is what it printed, as printed.
	Text string `json:"text"`
}

// WriteFindings writes f to its FindingsPath (0600, replaced atomically).
func WriteFindings(stateRoot string, f Findings) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	path := FindingsPath(stateRoot, f.ID)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// TakeFindings reads and removes the findings of the ended session id.
func TakeFindings(stateRoot, id string) (Findings, error) {
	path := FindingsPath(stateRoot, id)
	var f Findings
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("%s: %v", path, err)
	}
	return f, os.Remove(path)
}

// Pending lists the ids of the ended detached sessions of workdir whose
// findings wait to be printed, oldest first ("" workdir: all).
func Pending(stateRoot, workdir string) []Findings {
	names, _ := filepath.Glob(filepath.Join(Dir(stateRoot), "*.findings.json"))
	var out []Findings
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			continue
		}
		var f Findings
		if json.Unmarshal(b, &f) != nil || f.ID+".findings.json" != filepath.Base(n) {
			continue
		}
		if workdir == "" || f.Workdir == workdir {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Ended.Before(out[b].Ended) })
	return out
}

// Describe is the line before a detached session's findings.
func (f Findings) Describe() string {
	why := map[string]string{
		"stop": "was stopped (agent-sandbox stop)",
		"idle": "ended on its idle timeout",
	}[f.Reason]
	if why == "" {
		why = "ended"
	}
	msg := fmt.Sprintf("session %s (%s, %s) %s at %s", f.ID, f.Agent, f.Workdir, why, f.Ended.Local().Format(time.DateTime))
	if strings.TrimSpace(f.Text) == "" {
		return msg + ": nothing to report"
	}
	return msg + "; what it reported:"
}

// LockLog takes the lock a detached session's supervisor holds on its log
// (LogPath) for as long as it lives: f is the log, open for it (a lock on
// the open file, which its supervisor and the sandbox's init share).
func LockLog(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// Orphans lists the ids of detached sessions whose supervisor ended
// without keeping its findings (it was killed): a log no process holds
// the lock of (LockLog), with no findings beside it.
func Orphans(stateRoot string) []string {
	names, _ := filepath.Glob(filepath.Join(Dir(stateRoot), "*.log"))
	var out []string
	for _, n := range names {
		id := strings.TrimSuffix(filepath.Base(n), ".log")
		if _, err := os.Stat(FindingsPath(stateRoot, id)); err == nil {
			continue
		}
		f, err := os.Open(n)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			out = append(out, id)
		}
		f.Close()
	}
	sort.Strings(out)
	return out
}
