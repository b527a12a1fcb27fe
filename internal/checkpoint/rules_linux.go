//go:build linux

package checkpoint

import (
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// treeRules are the ignore rules a checkpoint of the workdir as it is now
// would apply: the defaults, its .gitignore and .git/info/exclude.
func (s *Store) treeRules() ([]string, error) {
	root, err := safefs.OpenFd(s.Workdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	return append(append([]string{}, DefaultRules...), append(readSmall(root, ".gitignore"), readSmall(root, ".git/info/exclude")...)...), nil
}

// beforeBase is the base of a run's checkpoint before it: the tree's own
// ignore rules (nil when they cannot be read), without a rule that is new
// since the rules the store applied last and would leave out a path the
// last checkpoint kept (a directory, or a file over the ignored-file
// cap). Such a rule is not applied, and said: an agent that adds `*/` to
// .git/info/exclude (a change `git status` does not show) must not hide
// from the next run's checkpoint, and so from diff and undo, what this
// one kept. A rule applies once no checkpoint before it kept what it
// leaves out (remove those paths, and it applies from the run after).
func (s *Store) beforeBase(headID string, warn io.Writer) *Manifest {
	rules, err := s.treeRules()
	if err != nil {
		return nil
	}
	// The rules checked are the rules applied (not the tree's read again,
	// which a concurrent run's agent may have changed since).
	base := &Manifest{Rules: rules}
	var last []string
	if b, err := os.ReadFile(s.path("rules")); err == nil && json.Unmarshal(b, &last) == nil && slices.Equal(last, rules) {
		return base
	}
	patterns := 0
	for _, l := range rules {
		if isPattern(l) {
			patterns++
		}
	}
	if patterns > MaxRules {
		diag.Warnf(warn, "checkpoint: the workdir's .gitignore and .git/info/exclude hold more than %d patterns: only the first %d are applied (what the others would leave out is kept)", MaxRules, MaxRules)
	}
	var keep []string
	if headID != "" {
		if prev, err := s.Manifest(headID); err == nil {
			keep = s.keepRules(rules, prev, warn)
		} else {
			keep = rules
		}
	} else {
		keep = rules
	}
	if b, err := json.Marshal(keep); err == nil {
		_ = writeFileAtomic(s.path("rules"), b)
	}
	base.Rules = keep
	return base
}

// keepRules are rules without the new ones (not in prev's) that would
// leave out what prev kept; each one left out is named on warn.
func (s *Store) keepRules(rules []string, prev *Manifest, warn io.Writer) []string {
	known := map[string]bool{}
	for _, r := range prev.Rules {
		known[r] = true
	}
	var keep []string
	n := 0
	for _, line := range rules {
		if !isPattern(line) || n >= MaxRules {
			// Not a pattern, or one past MaxRules: never applied.
			keep = append(keep, line)
			continue
		}
		n++
		if known[line] {
			keep = append(keep, line)
			continue
		}
		one, hit := parseRules([]string{line}), ""
		for _, e := range prev.Entries {
			if e.Type == TypeDir && one.ignored(e.Path, true) || e.Type == TypeFile && e.Size > s.Settings.IgnoredFileMax && one.ignored(e.Path, false) {
				hit = e.Path
				break
			}
		}
		if hit == "" {
			keep = append(keep, line)
			continue
		}
		diag.Warnf(warn, "checkpoint: the ignore pattern %s (the workdir's .gitignore or .git/info/exclude) is not applied: it would leave out %s, which the checkpoint before kept (a run may have added it to hide a later change from diff and undo); it applies once no checkpoint keeps what it leaves out", Quote(strings.TrimSpace(line)), Quote(hit))
	}
	return keep
}
