//go:build !linux

package workscan

import "io/fs"

// Watch does nothing where inotify is missing: the scan asks every
// recorded directory whether it changed.
type Watch struct{}

// watchToken is a watch Watch.add placed (none here).
type watchToken struct{}

// NewWatch returns nil: there is no watch to be had.
func NewWatch(int, string) *Watch { return nil }

func (w *Watch) add(string) (watchToken, fs.FileInfo) { return watchToken{}, nil }

func (w *Watch) keep(string, watchToken, fs.FileInfo, treeDir, bool, bool) {}

func (w *Watch) vouches(string, treeDir, *Tree) bool { return false }

func (w *Watch) patched(_ string, td treeDir, _ *Tree) (treeDir, bool) { return td, false }
