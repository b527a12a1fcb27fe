package broker

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Entry is one line of the audit log: one connection attempt.
type Entry struct {
	// Time is when the request arrived (UTC).
	Time time.Time `json:"time"`
	// Agent is the agent ID of the run.
	Agent string `json:"agent"`
	// Method is CONNECT or the plain HTTP method; empty when no request
	// line could be read.
	Method string `json:"method,omitempty"`
	// Host and Port are the target as the client named it.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Address is the resolved IP:PORT dialled (or refused).
	Address string `json:"address,omitempty"`
	// Decision is DecisionAllowed, DecisionRefused or DecisionFailed.
	Decision string `json:"decision"`
	// Reason names the rule that decided (or what failed).
	Reason string `json:"reason"`
	// BytesUp and BytesDown count bytes sent to and received from the
	// upstream host.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
	// DurationMS is the time from request to end of the connection.
	DurationMS int64 `json:"duration_ms"`
}

// auditLog appends entries to <dir>/<agent>.jsonl, rotating it to
// <agent>.jsonl.1 at a size bound.
type auditLog struct {
	mu   sync.Mutex
	path string
	max  int64
	f    *os.File
	size int64
	// written counts the bytes this run wrote (Config.AuditRunBytes).
	written int64
}

// AuditFile is the audit log path of an agent.
func AuditFile(dir, agent string) string {
	return filepath.Join(dir, agent+".jsonl")
}

func openAudit(dir, agent string, max int64) (*auditLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("broker: cannot create the audit directory: %v", err)
	}
	a := &auditLog{path: AuditFile(dir, agent), max: max}
	if err := a.open(); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *auditLog) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("broker: cannot open the audit log: %v", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("broker: audit log %s is not a regular file", a.path)
	}
	a.f, a.size = f, st.Size()
	return nil
}

func (a *auditLog) write(e *Entry) error {
	_, err := a.writeBudget(e, 0)
	return err
}

// writeBudget writes e unless that would take what this log wrote past
// budget bytes (0: no bound); it returns the bytes written (0 when over).
func (a *auditLog) writeBudget(e *Entry, budget int64) (int, error) {
	line, err := json.Marshal(e)
	if err != nil {
		return 0, err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return 0, errors.New("audit log closed")
	}
	if budget > 0 && a.written+int64(len(line)) > budget {
		return 0, nil
	}
	n, err := a.writeLocked(line)
	a.written += int64(n)
	return n, err
}

func (a *auditLog) writeLocked(line []byte) (int, error) {
	if a.size+int64(len(line)) > a.max && a.size > 0 {
		if err := a.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	return n, err
}

// rotate renames the file to .1 and starts a new one. When another
// process (a second run of the same agent) rotated first, it only reopens.
func (a *auditLog) rotate() error {
	cur, err1 := a.f.Stat()
	onDisk, err2 := os.Lstat(a.path)
	if err1 == nil && err2 == nil && os.SameFile(cur, onDisk) {
		if err := os.Rename(a.path, a.path+".1"); err != nil {
			return err
		}
	}
	a.f.Close()
	a.f = nil
	if err := a.open(); err != nil {
		return err
	}
	return nil
}

func (a *auditLog) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

// ReadAudit returns the last n entries (all when n <= 0) of an agent's
// audit log, oldest first, including the rotated file; with agent "" of
// every agent's log in dir, merged by time. A missing log is no entries.
// Lines that are not entries are skipped.
func ReadAudit(dir, agent string, n int) ([]Entry, error) {
	var files []string
	if agent != "" {
		if err := checkAgentID(agent); err != nil {
			return nil, err
		}
		files = []string{AuditFile(dir, agent) + ".1", AuditFile(dir, agent)}
	} else {
		des, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, de := range des {
			if strings.HasSuffix(de.Name(), ".jsonl") || strings.HasSuffix(de.Name(), ".jsonl.1") {
				files = append(files, filepath.Join(dir, de.Name()))
			}
		}
	}
	var out []Entry
	for _, f := range files {
		es, err := readEntries(f)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if n > 0 && len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

func readEntries(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Decision != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// WriteLog renders entries for `agent-sandbox log`: one JSON object per
// line with asJSON, else one aligned text line per entry (local time,
// decision, method, host:port, address, bytes up/down, duration, reason).
// Text from the agent is stripped of control characters.
func WriteLog(w io.Writer, entries []Entry, asJSON bool) error {
	bw := bufio.NewWriter(w)
	if asJSON {
		enc := json.NewEncoder(bw)
		for i := range entries {
			if err := enc.Encode(&entries[i]); err != nil {
				return err
			}
		}
		return bw.Flush()
	}
	if len(entries) == 0 {
		fmt.Fprintln(bw, "no egress decisions recorded")
		return bw.Flush()
	}
	for _, e := range entries {
		target := sanitize(e.Host)
		if strings.Contains(target, ":") {
			target = "[" + target + "]"
		}
		if e.Port != 0 {
			target = fmt.Sprintf("%s:%d", target, e.Port)
		}
		addr := e.Address
		if addr == "" {
			addr = "-"
		}
		method := e.Method
		if method == "" {
			method = "-"
		}
		agent := ""
		if e.Agent != "" {
			agent = sanitize(e.Agent) + " "
		}
		fmt.Fprintf(bw, "%s %s%-7s %-7s %s %s up=%d down=%d %dms %s\n",
			e.Time.Local().Format("2006-01-02 15:04:05"), agent, e.Decision, sanitize(method),
			target, addr, e.BytesUp, e.BytesDown, e.DurationMS, sanitize(e.Reason))
	}
	return bw.Flush()
}
