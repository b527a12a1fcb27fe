//go:build linux

package checkpoint

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
	"github.com/agent-sandbox/agent-sandbox/internal/safefs"
)

// ListRuns prints the workdir's runs, oldest first: id, time, command,
// exit status, the checkpoint before it and a one-line summary.
func (s *Store) ListRuns(out, errw io.Writer) error {
	runs, bad, err := s.Runs()
	if err != nil {
		return err
	}
	for _, b := range bad {
		diag.Warnf(errw, "%s", b)
	}
	if len(runs) == 0 {
		fmt.Fprintf(out, "no runs recorded for %s\n", s.Workdir)
		return nil
	}
	for _, r := range runs {
		what := r.Command
		if r.Kind == "undo" {
			what = "undo of " + r.Undid
		}
		exit := fmt.Sprint(r.Exit)
		if r.Exit < 0 {
			exit = "running or killed"
		}
		fmt.Fprintf(out, "%s  %s  %s  exit %s  checkpoint %s  %s\n", r.ID, r.Start.Local().Format("2006-01-02 15:04"), Quote(what), exit, r.Before, r.Summary)
	}
	return nil
}

// ShowDiff prints what run changed: its checkpoint before against the
// one after (or, for a run with none after, against the workdir now).
func (s *Store) ShowDiff(runID string, out io.Writer) error {
	r, err := s.FindRun(runID)
	if err != nil {
		return err
	}
	before, err := s.Manifest(r.Before)
	if err != nil {
		return err
	}
	var after *Manifest
	ownerAccess(s.Workdir)
	if r.After != "" {
		after, err = s.Manifest(r.After)
	} else {
		after, err = s.Scan(before)
	}
	if err != nil {
		return err
	}
	cs := Diff(before, after)
	fmt.Fprintf(out, "run %s (%s): %s\n", r.ID, Quote(r.Command), Summary(cs))
	for _, c := range cs {
		fmt.Fprintln(out, "  "+c.String())
	}
	if len(before.Skipped) > 0 {
		fmt.Fprintf(out, "not compared (left out of the checkpoint): %s\n", skipList(before.Skipped, 10))
	}
	if hidden := newSkips(before, after); len(hidden) > 0 {
		fmt.Fprintf(out, "not compared (left out after the run: what lies there may have changed, undo replaces it): %s\n", skipList(hidden, 10))
	}
	return nil
}

// newSkips are what b left out that a did not: a directory the agent made
// unreadable (chmod 000 after changing what it holds) hides its changes
// from the comparison, and must be named.
func newSkips(a, b *Manifest) []Skip {
	var out []Skip
	for _, k := range b.Skipped {
		if !under(k.Path, a.Skipped) {
			out = append(out, k)
		}
	}
	return out
}

// UndoOptions are the choices of `agent-sandbox undo`.
type UndoOptions struct {
	// Run is the run to undo ("": the latest).
	Run string
	// Confirm is asked once the plan is shown; nil or false changes
	// nothing.
	Confirm func() bool
	Out     io.Writer
	Err     io.Writer
}

// Undo puts the workdir back as run's checkpoint before it recorded it.
// It refuses while a run is live in the workdir, shows what it will do,
// checkpoints the current state first (so that the undo is a run that
// can itself be undone) and writes nothing unless o.Confirm says yes.
func Undo(stateRoot, workdir string, set Settings, o UndoOptions) error {
	lock, err := lockExclusive(stateRoot, workdir)
	if err != nil {
		return err
	}
	defer lock.Close()
	s, err := Open(stateRoot, workdir, set)
	if err != nil {
		return err
	}
	repairModes(stateRoot, s.Dir, true)
	ownerAccess(workdir)
	r, err := s.FindRun(o.Run)
	if err != nil {
		return err
	}
	target, err := s.Manifest(r.Before)
	if err != nil {
		return err
	}
	if err := s.CheckBlobs(target); err != nil {
		return err
	}
	cur, err := s.Take(target)
	if err != nil {
		return fmt.Errorf("undo: the current state could not be checkpointed, so nothing was changed: %v", err)
	}
	cs := Diff(cur, target)
	fmt.Fprintf(o.Out, "undo of run %s (%s) puts back checkpoint %s: %s\n", r.ID, Quote(r.Command), target.ID, Summary(cs))
	for _, c := range cs {
		fmt.Fprintln(o.Out, "  "+c.String())
	}
	if r.After != "" && r.After != cur.ID {
		fmt.Fprintf(o.Out, "note: the workdir changed after the run ended (checkpoint %s); those changes are undone too, and kept in checkpoint %s\n", r.After, cur.ID)
	}
	ti := index(target)
	for _, k := range sortedSkips(cur.Skipped) {
		switch {
		case under(k.Path, target.Skipped):
		case ti[k.Path] != nil:
			// Restore replaces it with what target recorded there.
			fmt.Fprintf(o.Out, "replaced: %s (%s, not in the checkpoint of the current state: what it holds now is not kept)\n", Quote(k.Path), k.Why)
		default:
			fmt.Fprintf(o.Out, "left as it is: %s (%s, not in the checkpoint of the current state)\n", Quote(k.Path), k.Why)
		}
	}
	for _, l := range s.linkedNames(cs) {
		fmt.Fprintln(o.Out, l)
	}
	if len(cs) == 0 {
		fmt.Fprintln(o.Out, "nothing to do")
		return nil
	}
	if o.Confirm == nil || !o.Confirm() {
		fmt.Fprintln(o.Out, "nothing changed (run `agent-sandbox undo --yes` to do it)")
		return nil
	}
	u := &Run{ID: NewID(time.Now()), Kind: "undo", Command: "undo", Undid: r.ID, Before: cur.ID, Start: time.Now().UTC(), Exit: -1}
	if err := s.SaveRun(u); err != nil {
		return fmt.Errorf("checkpoint store %s: recording the undo: %v; nothing was changed", s.Dir, err)
	}
	if err := s.Restore(target, cur); err != nil {
		return fmt.Errorf("%v (the state before the undo is checkpoint %s: `agent-sandbox undo` puts it back)", err, cur.ID)
	}
	u.End, u.Exit = time.Now().UTC(), 0
	if after, err := s.Take(target); err == nil {
		u.After = after.ID
		u.Summary = Summary(Diff(cur, after))
	}
	if err := s.SaveRun(u); err != nil {
		diag.Warnf(o.Err, "checkpoint store %s: recording the undo: %v", s.Dir, err)
	}
	fmt.Fprintf(o.Out, "done: the workdir is as checkpoint %s recorded it; `agent-sandbox undo` undoes this undo\n", target.ID)
	return nil
}

// linkedNames are notes for the files undo would replace or delete that
// have other hard links: undo replaces the workdir's name (a new file
// renamed into place, never a write through the link), so a file outside
// the workdir that shares it (a dotfile a dotfiles repository links)
// keeps what the agent wrote through the workdir's name.
func (s *Store) linkedNames(cs []Change) []string {
	root, err := safefs.OpenFd(s.Workdir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(root)
	var out []string
	for _, c := range cs {
		if c.Old == nil || c.Old.Type != TypeFile || c.Kind == ModeOnly {
			continue
		}
		dir, name := path.Split(c.Path)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		pfd, err := openDirBeneath(root, dir, s.Workdir)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
			out = append(out, fmt.Sprintf("note: %s has %d hard links: undo replaces this name only (it never writes through a link); the file's other names, outside what undo restores, keep what was written to it", Quote(c.Path), st.Nlink))
		}
		unix.Close(pfd)
	}
	return out
}

// OpenExisting opens the store of workdir for runs and diff.
func OpenExisting(stateRoot, workdir string, set Settings) (*Store, error) {
	return Open(stateRoot, workdir, set)
}
