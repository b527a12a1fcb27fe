package guard

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/protect"
)

// A run's marker: Begin writes one in Options.RunDir (the state root,
// outside every grant) holding the ledger and its snapshot from before the
// run; End removes it once the final audit is done. A marker whose
// agent-sandbox no longer runs is a run whose final audit never happened
// (agent-sandbox was killed: SIGKILL, the OOM killer, a power cut), and
// Recover, called by the next start in that workdir, audits and restores it
// against that snapshot.

// marker is what a run's marker file holds.
type marker struct {
	Pid     int
	Start   string // the process's start time (procStart)
	Begun   time.Time
	Workdir string
	Agent   string
	Entries []protect.Entry
	Bases   []savedSnap
	NotDir  []string
}

// savedSnap is a snapshot as a marker keeps it.
type savedSnap struct {
	Exists, Dir, Other bool
	Mode               fs.FileMode
	Sum                [32]byte
	HasContent         bool
	Content            []byte
	Entries            map[string]savedSnap
	Err                string
}

func save(s snapshot) savedSnap {
	v := savedSnap{Exists: s.exists, Dir: s.dir, Other: s.other, Mode: s.mode, Sum: s.sum, HasContent: s.content != nil, Content: s.content}
	if s.err != nil {
		v.Err = s.err.Error()
	}
	if s.entries != nil {
		v.Entries = make(map[string]savedSnap, len(s.entries))
		for n, e := range s.entries {
			v.Entries[n] = save(e)
		}
	}
	return v
}

func (v savedSnap) load() snapshot {
	s := snapshot{exists: v.Exists, dir: v.Dir, other: v.Other, mode: v.Mode, sum: v.Sum}
	if v.HasContent {
		s.content = v.Content
		if s.content == nil {
			s.content = []byte{}
		}
	}
	if v.Err != "" {
		s.err = errors.New(v.Err)
	}
	if v.Entries != nil {
		s.entries = make(map[string]snapshot, len(v.Entries))
		for n, e := range v.Entries {
			s.entries[n] = e.load()
		}
	}
	return s
}

// markerPath is this process's marker in dir.
func markerPath(dir string) string {
	return filepath.Join(dir, strconv.Itoa(os.Getpid())+".run")
}

// writeMarker records the run's snapshot (Begin).
func (g *Guard) writeMarker() error {
	if g.opts.RunDir == "" {
		return nil
	}
	m := marker{Pid: os.Getpid(), Start: procStart(os.Getpid()), Begun: g.started, Workdir: g.opts.Workdir, Agent: g.opts.Agent}
	for _, st := range g.states {
		m.Entries = append(m.Entries, st.e)
		m.Bases = append(m.Bases, save(st.base))
	}
	for p := range g.notDir {
		m.NotDir = append(m.NotDir, p)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(m); err != nil {
		return err
	}
	if err := os.MkdirAll(g.opts.RunDir, 0o700); err != nil {
		return err
	}
	// Written whole and renamed into place, without fsync: it is there
	// for a killed agent-sandbox (the page cache outlives it), and a
	// sync would delay every start.
	f, err := os.CreateTemp(g.opts.RunDir, ".marker-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b.Bytes())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), markerPath(g.opts.RunDir))
	}
	if werr != nil {
		_ = os.Remove(f.Name())
	}
	return werr
}

// removeMarker removes the run's marker (End, once the audit is final).
func (g *Guard) removeMarker() {
	if g.opts.RunDir != "" {
		_ = os.Remove(markerPath(g.opts.RunDir))
	}
}

// Recover audits, and restores, every run in o.RunDir whose agent-sandbox
// ended without its final audit (its marker left behind by a process that
// no longer runs), against that run's snapshot from before it, and says so
// on stderr. The next start in the workdir calls it before it readies
// anything. It returns how many such runs it audited.
func Recover(o Options, stderr io.Writer) int {
	if o.RunDir == "" {
		return 0
	}
	names, err := os.ReadDir(o.RunDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, d := range names {
		if !strings.HasSuffix(d.Name(), ".run") {
			continue
		}
		p := filepath.Join(o.RunDir, d.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m marker
		if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
			diag.Warnf(stderr, "the marker %s of an earlier run cannot be read (%v): that run's audit cannot be repeated; it is removed", p, err)
			_ = os.Remove(p)
			continue
		}
		if running(m.Pid, m.Start) {
			continue // a run going on now (in another agent-sandbox)
		}
		n++
		recoverRun(o, m, stderr)
		_ = os.Remove(p)
	}
	return n
}

// recoverRun audits the run m left unaudited.
func recoverRun(o Options, m marker, stderr io.Writer) {
	g := &Guard{opts: Options{Workdir: m.Workdir, QuarantineDir: o.QuarantineDir, Agent: m.Agent}, started: m.Begun, byPath: map[string]*state{}, findings: map[string]*Finding{}, notDir: map[string]bool{}}
	for _, p := range m.NotDir {
		g.notDir[p] = true
	}
	for i, e := range m.Entries {
		if i >= len(m.Bases) {
			break
		}
		st := &state{e: e, base: m.Bases[i].load()}
		if e.Format != protect.FormatOpaque {
			if !st.base.exists {
				st.baseKeys, st.baseOK = map[string]string{}, true
			} else if st.base.content != nil {
				st.baseKeys, st.baseOK = protect.CodeKeys(e, st.base.content)
			}
		}
		st.accepted = st.base.content
		g.states = append(g.states, st)
		g.byPath[e.Path] = st
	}
	diag.Warnf(stderr, "a run of %s in %s (started %s, agent-sandbox process %d) ended without its final audit (agent-sandbox was killed, or a process of the run outlived it): auditing it now, against what the protected files were before it; a process that run left behind is not agent-sandbox's any more and may still run (look for it with ps)", m.Agent, m.Workdir, m.Begun.Format(time.RFC3339), m.Pid)
	g.finalAudit()
	out := g.Findings()
	for _, f := range out {
		diag.Warnf(stderr, "%s", f.Text)
	}
	if len(out) == 0 {
		diag.Notef(stderr, "nothing that run could change to run code had changed")
	}
}

// running says whether process pid, started at start (procStart), runs.
func running(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	now := procStart(pid)
	if now == "" {
		return false
	}
	return start == "" || now == start
}

// errMarker wraps a failure to record the run's marker.
func errMarker(err error) error {
	return fmt.Errorf("cannot record the run in agent-sandbox's state (%v): a run whose agent-sandbox is killed could not be audited by the next one; free the state directory and try again", err)
}
