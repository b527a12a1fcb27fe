//go:build !linux

package landlock

import "os"

// runTmp is a run's TMPDIR: off Linux always a new one, removed after.
type runTmp struct{ path string }

func claimRunTmp(dir string) (*runTmp, error) {
	p, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return nil, err
	}
	return &runTmp{p}, nil
}

func (t *runTmp) release(bool) { os.RemoveAll(t.path) }
