package sbx

import (
	"errors"
	"os"
	"os/exec"
	"syscall"

	"github.com/agent-sandbox/agent-sandbox/internal/backend"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/session"
)

// SessionExecArgv is the `sbx exec` command line that runs cmd in the
// session's microVM as the agent runs there (its environment and working
// directory): agent-sandbox exec under sbx.
func (p Prepared) SessionExecArgv(cmd []string, tty bool) []string {
	q := p
	q.Exec.Command = cmd
	return q.ExecArgv(tty)
}

// sessionHandlers are the sbx session's: exec maps to `sbx exec` into the
// same microVM, with the caller's standard streams; allow is refused.
func sessionHandlers(p Prepared, stdio launch.Stdio) func(launch.Started) func() {
	return backend.SessionHook(p.Spec, "sbx", session.Handlers{
		Exec: func(argv []string, fds []*os.File) (session.Proc, error) { return startSessionExec(p, argv, fds) },
		Unsupported: map[string]string{
			"allow": backend.NoAllow("sbx", "the microVM's network policy is sbx's"),
		},
	}, stdio)
}

// sbxProc is a `sbx exec` started for agent-sandbox exec.
type sbxProc struct{ cmd *exec.Cmd }

func (s sbxProc) Pid() int { return s.cmd.Process.Pid }

func (s sbxProc) Signal(sig int) error { return s.cmd.Process.Signal(syscall.Signal(sig)) }

func (s sbxProc) Wait() int {
	return launch.ExitStatus(s.cmd.Wait())
}

// startSessionExec runs `sbx exec` for argv with the caller's stdio.
func startSessionExec(p Prepared, argv []string, stdio []*os.File) (session.Proc, error) {
	if len(stdio) != 3 {
		return nil, errors.New("exec needs three standard streams")
	}
	a := p.SessionExecArgv(argv, launch.IsTerminal(stdio[0]) && launch.IsTerminal(stdio[1]))
	cmd := exec.Command(a[0], a[1:]...)
	cmd.Env = os.Environ()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return sbxProc{cmd}, nil
}
