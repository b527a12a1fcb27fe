//go:build !linux

package guard

import "testing"

// benchWatchedTree: no watch where inotify is missing.
func benchWatchedTree(*testing.B, string, *tree) *tree { return nil }
