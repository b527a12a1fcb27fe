//go:build !linux

package workscan

import "testing"

// benchWatchedTree: no watch where inotify is missing.
func benchWatchedTree(*testing.B, string, *Tree) *Tree { return nil }
