//go:build linux

package main

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/session"
)

// isTerminal reports whether fd is a terminal.
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// ttyDrain bounds how long exec relays the command's terminal after its
// status came: a process it left in the background may hold the pty open.
const ttyDrain = 500 * time.Millisecond

// execWithTTY runs argv in the session c with a terminal of its own: a
// pty of the session's (its devpts instance, so that ttyname finds it in
// the sandbox), sized as the caller's terminal, whose master comes back
// over the control socket. The caller's terminal is put in raw mode and
// relayed both ways; its size changes (SIGWINCH) are set on the pty; it is
// restored on every way out (the command's end, the session's, a signal
// to exec, an error). The caller's terminal never enters the sandbox: the
// command cannot push input into it (TIOCSTI on its pty reaches only that
// pty). What the command prints reaches the caller's terminal as any
// program's output does, escape sequences included.
func execWithTTY(c *session.Client, argv []string) (int, error) {
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	rows, cols := terminalSize(out, in)
	// The signals are registered before the terminal is made raw: a
	// signal to exec must find the handler that restores it. ctl: window
	// size and job-control stops of exec itself (kill -TSTP: a Ctrl-Z at
	// the keyboard goes to the command through its terminal).
	ctl, sigs := make(chan os.Signal, 4), make(chan os.Signal, 8)
	signal.Notify(ctl, unix.SIGWINCH, unix.SIGTSTP, unix.SIGCONT)
	defer signal.Stop(ctl)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	defer signal.Stop(sigs)
	master, err := c.ExecTTY(argv, rows, cols)
	if err != nil {
		return 0, err
	}
	// A descriptor of its own, non-blocking, so that the relay can be
	// ended (Close unblocks a pollable file's reads).
	mfd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	master.Close()
	if err != nil {
		return 0, err
	}
	if err := unix.SetNonblock(mfd, true); err != nil {
		unix.Close(mfd)
		return 0, err
	}
	pty := os.NewFile(uintptr(mfd), "pty")
	defer pty.Close()

	term := newRawTerminal(in)
	defer term.restore()
	term.makeRaw()

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case s := <-ctl:
				switch s {
				case unix.SIGTSTP:
					term.restore()
					_ = unix.Kill(os.Getpid(), unix.SIGSTOP)
				case unix.SIGCONT:
					// The shell that continued exec may have set
					// its own modes meanwhile.
					term.forget()
					term.makeRaw()
					fallthrough
				default:
					if r, c := terminalSize(out, in); r > 0 {
						_ = unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, &unix.Winsize{Row: r, Col: c})
					}
				}
			case <-stop:
				return
			}
		}
	}()
	go func() {
		_, _ = io.Copy(pty, os.Stdin)
		// The caller's input ended (a pipe, with -t): end-of-file to
		// the command, as ^D at a terminal.
		_, _ = pty.Write([]byte{4})
	}()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(os.Stdout, pty) // until EIO: no process holds the pty
	}()
	code, err := c.Wait(sigs)
	select {
	case <-drained:
	case <-time.After(ttyDrain):
	}
	return code, err
}

// terminalSize is the size of the first of fds that is a terminal; 24x80
// when none is.
func terminalSize(fds ...int) (uint16, uint16) {
	for _, fd := range fds {
		if w, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && w.Row > 0 && w.Col > 0 {
			return w.Row, w.Col
		}
	}
	return 24, 80
}

// rawTerminal is the caller's terminal while exec relays a command's:
// raw, and put back as it was.
type rawTerminal struct {
	mu  sync.Mutex
	fd  int
	old *unix.Termios // nil: not a terminal
	raw bool
}

func newRawTerminal(fd int) *rawTerminal {
	t := &rawTerminal{fd: fd}
	if old, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
		t.old = old
	}
	return t
}

// makeRaw puts the terminal in raw mode (cfmakeraw): every key goes to
// the command's terminal, whose own line discipline makes Ctrl-C a SIGINT.
func (t *rawTerminal) makeRaw() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.old == nil || t.raw {
		return
	}
	r := *t.old
	r.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	r.Oflag &^= unix.OPOST
	r.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	r.Cflag &^= unix.CSIZE | unix.PARENB
	r.Cflag |= unix.CS8
	r.Cc[unix.VMIN], r.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(t.fd, unix.TCSETS, &r) == nil {
		t.raw = true
	}
}

// forget marks the terminal as not raw (its modes may have been changed
// behind exec's back), so that makeRaw sets them again.
func (t *rawTerminal) forget() {
	t.mu.Lock()
	t.raw = false
	t.mu.Unlock()
}

// restore puts the terminal's modes back as they were.
func (t *rawTerminal) restore() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.old == nil || !t.raw {
		return
	}
	_ = unix.IoctlSetTermios(t.fd, unix.TCSETS, t.old)
	t.raw = false
}
