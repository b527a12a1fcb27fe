//go:build !linux

package guard

import "io/fs"

// treeWatch does nothing where inotify is missing: the scan asks every
// recorded directory whether it changed.
type treeWatch struct{}

// watchToken is a watch treeWatch.add placed (none here).
type watchToken struct{}

func newTreeWatch(int, string) *treeWatch { return nil }

func (w *treeWatch) add(string) (watchToken, fs.FileInfo) { return watchToken{}, nil }

func (w *treeWatch) keep(string, watchToken, fs.FileInfo, treeDir, bool, bool) {}

func (w *treeWatch) vouches(string, treeDir, *tree) bool { return false }

func (w *treeWatch) patched(_ string, td treeDir, _ *tree) (treeDir, bool) { return td, false }
