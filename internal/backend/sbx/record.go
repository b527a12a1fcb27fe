package sbx

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/atomicfile"
	"github.com/agent-sandbox/agent-sandbox/internal/optfile"
	"github.com/agent-sandbox/agent-sandbox/internal/posture"
	"github.com/agent-sandbox/agent-sandbox/internal/uniq"
)

// Record is what agent-sandbox remembers about a sandbox it created, in
// RecordDir(stateRoot)/<name>.json. It lives under the state root, outside
// every mount (only the per-agent state dir below it is mounted), so the
// agent in the guest cannot rewrite its own history.
type Record struct {
	// Name is the sandbox name.
	Name string `json:"name"`
	// Agent is the agent id.
	Agent string `json:"agent"`
	// AgentDir is the agent folder; "" for a built-in one.
	AgentDir string `json:"agent_dir"`
	// Workdir is the run's working directory (canonical).
	Workdir string `json:"workdir"`
	// Mounts are the `sbx create` mount arguments.
	Mounts []string `json:"mounts"`
	// Allowed are the resources of every per-sandbox allow rule applied to
	// the sandbox so far, and DenyAll whether `deny '**'` was: sbx's
	// per-sandbox rules only add up, so this is what the sandbox carries.
	Allowed []string `json:"allowed"`
	DenyAll bool     `json:"deny_all"`
	// UnknownRules is set when the record was started for a sandbox that
	// already existed without one: it may carry rules nobody recorded.
	UnknownRules bool `json:"unknown_rules"`
	// Created is when the sandbox was created (or first recorded);
	// LastUsed when a run last attached to it.
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used"`
}

// RecordDir is the directory of the sandbox records.
func RecordDir(stateRoot string) string { return filepath.Join(stateRoot, recordDirName) }

const recordDirName = "sbx"

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^agent-sandbox-[A-Za-z0-9][A-Za-z0-9.+-]*$`) })

// ValidName reports whether s is a name agent-sandbox could have given (and
// so safe as a file name).
func ValidName(s string) bool { return nameRe().MatchString(s) && len(s) <= 200 }

func recordPath(stateRoot, name string) string {
	return filepath.Join(RecordDir(stateRoot), name+".json")
}

// LoadRecord reads the record of a sandbox; nil, nil when there is none. A
// record that exists but cannot be read (a dangling symlink, a directory, no
// read permission) is an error, never "no record".
func LoadRecord(stateRoot, name string) (*Record, error) {
	if !ValidName(name) {
		return nil, nil
	}
	b, ok, err := optfile.ReadIn(stateRoot, filepath.Join(recordDirName, name+".json"))
	if err != nil {
		return nil, fmt.Errorf("%v (or delete it and remove the sandbox with `sbx rm -f %s`)", err, name)
	}
	if !ok {
		return nil, nil
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %v (delete the file and remove the sandbox with `sbx rm -f %s`)", recordPath(stateRoot, name), err, name)
	}
	return &r, nil
}

// SaveRecord writes a record atomically.
func SaveRecord(stateRoot string, r Record) error {
	if !ValidName(r.Name) {
		return fmt.Errorf("sandbox name %q is not one agent-sandbox gives", r.Name)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(recordPath(stateRoot, r.Name), append(b, '\n'), 0o600)
}

// DeleteRecord removes a sandbox's record (no error when there is none).
func DeleteRecord(stateRoot, name string) error {
	if !ValidName(name) {
		return nil
	}
	err := os.Remove(recordPath(stateRoot, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Records lists the names of every recorded sandbox, sorted.
func Records(stateRoot string) []string {
	entries, _ := os.ReadDir(RecordDir(stateRoot))
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && ValidName(n) && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// checkHistory compares the per-sandbox rules an attached sandbox already
// carries with this run's policy. sbx rules only add up, and agent-sandbox
// never removes one, so a sandbox that earlier runs allowed more hosts than
// this run's allowlist would silently be wider than asked: that is refused
// (exit 125) with the fix. A leftover `deny '**'` only makes the run
// stricter than asked, so it is a warning. A freshly created sandbox
// carries nothing.
func checkHistory(rec *Record, attached bool, mode posture.NetMode, rule *Rule, name string) (refusal, warning string) {
	if !attached {
		return "", ""
	}
	if rule != nil && rule.Decision == "deny" {
		// An allowlist that names no host is `deny '**'`, which beats every
		// allow rule the sandbox carries: judged as a blocked run.
		mode = posture.NetBlocked
	}
	fix := fmt.Sprintf("remove the sandbox with `sbx rm -f %s` and run again (it is recreated with this run's rules)", name)
	if rec == nil || rec.UnknownRules {
		if mode == posture.NetAllowlist {
			return fmt.Sprintf("sandbox %s already exists, but agent-sandbox has no record of the per-sandbox network rules it carries, so its allowlist may be wider than this run's; %s", name, fix), ""
		}
		if rec == nil {
			return "", ""
		}
	}
	if rec.DenyAll && mode != posture.NetBlocked {
		warning = fmt.Sprintf("sbx: sandbox %s still carries `deny '**'` from an earlier offline run, which beats every allow rule: this run has no network; %s", name, fix)
	}
	if mode == posture.NetAllowlist && rule != nil && rule.Decision == "allow" {
		now := map[string]bool{}
		for _, r := range strings.Split(rule.Resources, ",") {
			now[r] = true
		}
		var extra []string
		for _, r := range rec.Allowed {
			if !now[r] {
				extra = append(extra, r)
			}
		}
		if len(extra) > 0 {
			return fmt.Sprintf("sandbox %s still allows %s from earlier runs (per-sandbox sbx rules only add up), which this run's allowlist does not; %s", name, strings.Join(extra, ","), fix), warning
		}
	}
	return "", warning
}

// ParseList returns the agent-sandbox-* names in `sbx ls -q` output (one
// name per line; the first field of a line, so a header or extra columns do
// no harm), sorted and de-duplicated.
func ParseList(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && ValidName(f[0]) {
			names = append(names, f[0])
		}
	}
	return uniq.Sorted(names)
}

// Status is how a listed sandbox relates to the current configuration.
type Status string

// The statuses of a listed sandbox.
const (
	// Current: the recorded agent, run in the recorded workdir today,
	// gets this very sandbox.
	Current Status = "current"
	// Stale: it would get another one (a grant changed, the agent or the
	// workdir is gone); nothing will attach to this sandbox again.
	Stale Status = "stale"
	// Unknown: no record (created by hand, or the state dir was removed).
	// Never removed automatically.
	Unknown Status = "unknown"
)

// Listed is one agent-sandbox-* sandbox with its status.
type Listed struct {
	// Name is the sandbox name.
	Name   string
	Status Status
	// Reason says why, in a few words.
	Reason string
	// Record is the sandbox's record; nil when unknown.
	Record *Record
}

// CurrentName computes the name a record's agent gets today for the
// record's workdir; an error means it cannot run there any more.
type CurrentName func(Record) (string, error)

// Classify gives each agent-sandbox-* sandbox name a status. A sandbox is
// stale when it has a record and the record's agent (looked up by its id as
// today) run in the record's workdir would now get a different name: its
// mount set changed. Other projects' sandboxes stay current, because each
// is judged against its own workdir. Without a record a sandbox is unknown.
func Classify(names []string, stateRoot string, current CurrentName) []Listed {
	var out []Listed
	for _, n := range names {
		l := Listed{Name: n}
		rec, err := LoadRecord(stateRoot, n)
		switch {
		case err != nil:
			l.Status, l.Reason = Unknown, err.Error()
		case rec == nil:
			l.Status, l.Reason = Unknown, "no record: not created by this user's agent-sandbox, or its state was removed; not removed automatically"
		default:
			l.Record = rec
			if st, err := os.Stat(rec.Workdir); err != nil || !st.IsDir() {
				l.Status, l.Reason = Stale, fmt.Sprintf("%s in %s: the working directory is gone", rec.Agent, rec.Workdir)
				break
			}
			now, err := current(*rec)
			switch {
			case err != nil:
				l.Status, l.Reason = Stale, fmt.Sprintf("%s in %s: %v", rec.Agent, rec.Workdir, err)
			case now != n:
				l.Status, l.Reason = Stale, fmt.Sprintf("%s in %s: its mounts changed (it now gets %s)", rec.Agent, rec.Workdir, now)
			default:
				l.Status, l.Reason = Current, fmt.Sprintf("%s in %s", rec.Agent, rec.Workdir)
			}
		}
		out = append(out, l)
	}
	return out
}
