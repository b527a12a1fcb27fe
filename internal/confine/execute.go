package confine

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
	"github.com/agent-sandbox/agent-sandbox/internal/launch"
	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// Execute runs the agent of s confined by p and returns the exit status. It
// refuses (exit 125, one error line) when the kernel cannot enforce p.
func Execute(s spec.Spec, p landlock.Policy, stdio launch.Stdio, verbose bool) int {
	e, err := landlock.Plan(p)
	if err != nil {
		return refuse(stdio.Err, err)
	}
	for _, w := range warnings(e, p) {
		fmt.Fprintf(stdio.Err, "agent-sandbox: warning: %s\n", w)
	}
	if verbose {
		describe(stdio.Err, e)
	}
	for _, d := range []string{s.StateDir, TempDir(s)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return refuse(stdio.Err, fmt.Errorf("creating %s: %v", d, err))
		}
	}
	if !s.CommandFound {
		fmt.Fprintf(stdio.Err, "agent-sandbox: error: %s: command not found on PATH\n", s.Argv[0])
		return launch.ExitNotFound
	}
	if !verbose && isTerminal(stdio.Err) {
		fmt.Fprintln(stdio.Err, "🔒 Sandbox Active (landlock)")
	}
	env := Env(s, os.LookupEnv)
	start := func(cmd *exec.Cmd) (func() error, error) {
		proc, err := landlock.Start(cmd, p)
		if err != nil {
			return nil, err
		}
		return proc.Wait, nil
	}
	return launch.Run(s.Argv, env, s.Workdir, stdio, start)
}

// warnings are the protections the policy asks for that this kernel gives
// only in part; they are printed on every run.
func warnings(e landlock.Enforcement, p landlock.Policy) []string {
	var w []string
	if p.Network == landlock.NetBlocked && !e.NetNamespace {
		w = append(w, "network blocked with Landlock TCP rules only (no user namespaces here): UDP and DNS are not confined")
	}
	if !e.ScopeSignals {
		w = append(w, fmt.Sprintf("Landlock ABI %d cannot scope signals (needs ABI 6, Linux 6.12): the agent can signal your other processes", e.ABI))
	}
	if !e.ScopeAbstractUnix && !e.NetNamespace {
		w = append(w, fmt.Sprintf("Landlock ABI %d cannot scope abstract Unix sockets (needs ABI 6): the agent can reach host services listening on them", e.ABI))
	}
	return w
}

// describe prints how the policy is enforced, for --verbose.
func describe(w io.Writer, e landlock.Enforcement) {
	fmt.Fprintf(w, "agent-sandbox: landlock ABI %d; network namespace %v; TCP rules %v; signal scoping %v; abstract-socket scoping %v\n",
		e.ABI, e.NetNamespace, e.TCPRules, e.ScopeSignals, e.ScopeAbstractUnix)
	for _, x := range e.Warnings {
		fmt.Fprintf(w, "agent-sandbox: note: %s\n", x)
	}
}

func refuse(w io.Writer, err error) int {
	msg := strings.TrimPrefix(err.Error(), "landlock: ")
	fmt.Fprintf(w, "agent-sandbox: error: the landlock backend cannot enforce this policy here: %s\n", msg)
	return launch.ExitRefused
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
