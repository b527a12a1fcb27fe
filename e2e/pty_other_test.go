//go:build !linux

package e2e

import (
	"os"
	"testing"
)

// openPty skips: the announcement rows open Linux's /dev/ptmx.
func openPty(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	t.Skip("the pseudo-terminal rows use Linux's /dev/ptmx")
	return nil, nil
}
