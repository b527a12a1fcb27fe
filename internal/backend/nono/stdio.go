package nono

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/agent-sandbox/agent-sandbox/internal/launch"
)

// nono grants the files the agent's standard streams are open on, by
// path and read-write, whatever the descriptor's own access (measured with
// nono 0.78.0: a stderr redirected to a log, opened write-only, let the
// agent read the log back through /dev/stderr and by its path). So a
// stream that is a file (or a named FIFO) reaches nono as a pipe instead,
// which agent-sandbox relays to and from the file: nono grants no path,
// the agent reopens the pipe by /dev/stdin, /dev/stdout, /dev/stderr or
// /dev/fd/N, and the file is written (or read) through the caller's own
// descriptor only. The agent's streams then cannot seek, and a stdin
// file shows no size. Terminals and other devices are handed on as they
// are.

// PipedFiles is pipedFiles, for nono inside the namespace view (the
// view's init hands the agent what it was given, and nono's own Landlock
// layer inside would refuse reopening a file the view does not show),
// and whether any stream changed.
func PipedFiles(stdio launch.Stdio) (launch.Stdio, bool) {
	for _, s := range []any{stdio.In, stdio.Out, stdio.Err} {
		if f, ok := s.(*os.File); ok && isFileStream(f) {
			return pipedFiles(stdio), true
		}
	}
	return stdio, false
}

// pipedFiles returns stdio with each stream that is a file wrapped so
// that exec hands the agent a pipe; stdout and stderr on one file share
// one pipe (their order is kept).
func pipedFiles(stdio launch.Stdio) launch.Stdio {
	out := stdio
	if f, ok := stdio.In.(*os.File); ok && isFileStream(f) {
		out.In = &fileReader{f}
	}
	var w *fileWriter
	if f, ok := stdio.Out.(*os.File); ok && isFileStream(f) {
		w = &fileWriter{f}
		out.Out = w
	}
	if f, ok := stdio.Err.(*os.File); ok && isFileStream(f) {
		if g, ok := stdio.Out.(*os.File); ok && w != nil && sameFile(f, g) {
			out.Err = w
		} else {
			out.Err = &fileWriter{f}
		}
	}
	return out
}

// fileReader and fileWriter hide an *os.File from exec, which then makes
// a pipe and copies.
type fileReader struct{ f *os.File }

func (r *fileReader) Read(b []byte) (int, error) { return r.f.Read(b) }

type fileWriter struct{ f *os.File }

func (w *fileWriter) Write(b []byte) (int, error) { return w.f.Write(b) }

var _ io.Reader = (*fileReader)(nil)

// isFileStream says whether f is open on a regular file or a named FIFO.
func isFileStream(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	if fi.Mode().IsRegular() {
		return true
	}
	if fi.Mode()&os.ModeNamedPipe == 0 {
		return false
	}
	// An anonymous pipe (the caller's own `|`) has no path to grant.
	t, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return err == nil && len(t) > 0 && t[0] == '/'
}

// sameFile says whether f and g are open on one file.
func sameFile(f, g *os.File) bool {
	a, err1 := f.Stat()
	b, err2 := g.Stat()
	if err1 != nil || err2 != nil {
		return false
	}
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// relayDelay bounds how long the end of a run waits, once the agent has
// exited, for the relays of its piped streams to drain (a process it left
// behind holding a pipe open would otherwise hold the run).
const relayDelay = 2 * time.Second

// withRelayDelay returns start with exec's WaitDelay set on the command
// (start nil: exec's own Start and Wait).
func withRelayDelay(start func(*exec.Cmd) (launch.Started, error)) func(*exec.Cmd) (launch.Started, error) {
	return func(cmd *exec.Cmd) (launch.Started, error) {
		cmd.WaitDelay = relayDelay
		if start != nil {
			return start(cmd)
		}
		if err := cmd.Start(); err != nil {
			return launch.Started{}, err
		}
		return launch.Started{Wait: cmd.Wait}, nil
	}
}
