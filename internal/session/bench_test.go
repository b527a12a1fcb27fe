package session

import (
	"os"
	"testing"
)

// doneProc is a command that has already ended with status 0.
type doneProc struct{}

func (doneProc) Pid() int             { return 1 }
func (doneProc) Signal(sig int) error { return nil }
func (doneProc) Wait() int            { return 0 }

// BenchmarkExecRoundTrip is the control channel's share of an `exec`: the
// client's dial (token read, connect), the request with three descriptors,
// the supervisor's answer and the exit status, against a handler that
// starts nothing. What the engine adds (init's start of the command) and
// the client's process start are in e2e/bench/exec.sh.
func BenchmarkExecRoundTrip(b *testing.B) {
	root := b.TempDir()
	srv, err := Open(root, Info{Agent: "a", Engine: "view"}, Handlers{
		Exec: func(argv []string, stdio []*os.File) (Proc, error) {
			for _, f := range stdio {
				f.Close()
			}
			return doneProc{}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	fs := [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	b.ResetTimer()
	for range b.N {
		c, err := Dial(root, srv.ID())
		if err != nil {
			b.Fatal(err)
		}
		code, err := c.Exec([]string{"/bin/true"}, fs, nil)
		c.Close()
		if err != nil || code != 0 {
			b.Fatalf("Exec: %d %v", code, err)
		}
	}
}
