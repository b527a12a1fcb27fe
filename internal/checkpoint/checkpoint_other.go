//go:build !linux

package checkpoint

import (
	"errors"
	"io"
	"time"
)

// Modes of a run's checkpoint (--checkpoint, agent.toml's checkpoint).
const (
	ModeOn       = "on"
	ModeOff      = "off"
	ModeRequired = "required"
)

var errPlatform = errors.New("checkpoints are not supported on this platform yet")

// Active is a run in progress (none on this platform).
type Active struct{}

// BeginOptions are what Begin needs of the run.
type BeginOptions struct {
	StateRoot, Workdir, Command, Mode string
	Settings                          Settings
	Warn                              io.Writer
	Verbose                           bool
}

// Begin refuses mode required; otherwise it takes no checkpoint.
func Begin(o BeginOptions) (*Active, error) {
	if o.Mode == ModeRequired {
		return nil, errPlatform
	}
	return nil, nil
}

// End does nothing here.
func (a *Active) End(int) {}

// UndoOptions are the choices of `agent-sandbox undo`.
type UndoOptions struct {
	Run      string
	Confirm  func() bool
	Out, Err io.Writer
}

// Undo is not supported here.
func Undo(string, string, Settings, UndoOptions) error { return errPlatform }

// ListRuns is not supported here.
func (s *Store) ListRuns(io.Writer, io.Writer) error { return errPlatform }

// ShowDiff is not supported here.
func (s *Store) ShowDiff(string, io.Writer) error { return errPlatform }

// Prune is not supported here.
func (s *Store) Prune(time.Time) []string { return nil }
