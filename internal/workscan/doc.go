// Package workscan owns the scan of the working directory after a run:
// the one part of the host side that no ledger can predict. It looks
// below the workdir for git metadata planted or changed during the run
// (a .git anywhere, with its config, hooks, commondir), the protected
// project names in subdirectories, and the names other tools run code
// from at any depth (Scan), and reports each as a Finding.
//
// To keep that scan short after a long run it also owns the workdir's
// tree: read in the background while the agent runs (StartPrewalk), from
// the one the previous run left (SaveTree), and, where the guard's
// inotify instance is the sandbox's to destroy, followed by a watch of
// its directories (Watch) whose events the guard's loop hands over
// (Watch.Event, Watch.Finish). RecentBefore fingerprints what changed at
// the workdir's top just before the run, so that it is not taken for the
// agent's doing.
//
// internal/guard calls it from Begin, Watch and End; it knows nothing of
// the ledger, and the ledger's audit knows nothing of the tree.
package workscan

import (
	"io"
	"io/fs"
)

// Finding is one thing the scan found: the path it is about (or a
// parenthesised label for a group: "(tools)", "(unreadable)") and what
// to tell the user.
type Finding struct {
	Path string
	Text string
	// Unchecked says the finding is about what the scan could not check
	// (a directory it could not read, the scan stopped early), not about
	// what was planted.
	Unchecked bool
}

// Before is what changed at the workdir's top just before the run, as it
// was then (RecentBefore): the scan does not report it while unchanged.
type Before map[string]fingerprint

// Complete reports whether the scan that returned t read the whole
// workdir (a tree that is not complete is not saved for the next run).
func (t *Tree) Complete() bool { return t != nil && t.complete }

// ReadFile is a file opened by OpenRead (guard reads its snapshots and
// quarantines through it too).
type ReadFile interface {
	io.ReadCloser
	// Is reports whether the open file is the one fi describes.
	Is(fi fs.FileInfo) bool
}
