package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// probeResult is a finished probe of an external program.
type probeResult struct {
	code    int    // exit status; -1 when it did not exit normally
	out     string // stdout and stderr, combined
	err     error  // could not start, or no answer in time
	timeout time.Duration
}

// probe runs path with args: stdin empty (a prompt cannot hang it), NONO_*
// variables cleared and nono's update check off, bounded by the run's
// timeout. On timeout the whole process group is killed, and its output
// pipes are abandoned shortly after, so a probe never hangs doctor.
func (r *run) probe(path string, args ...string) probeResult {
	return runProbe(r.timeout, path, args...)
}

func runProbe(timeout time.Duration, path string, args ...string) probeResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = probeEnv(os.Environ())
	cmd.WaitDelay = time.Second
	ownProcessGroup(cmd)
	err := cmd.Run()
	// ExitCode is -1 for a process that did not start or was killed.
	res := probeResult{code: cmd.ProcessState.ExitCode(), out: out.String(), timeout: timeout}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.err = fmt.Errorf("gave no answer within %v", timeout)
	case err != nil:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			res.err = err
		}
	}
	return res
}

func probeEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "NONO_") {
			env = append(env, kv)
		}
	}
	return append(env, "NONO_NO_UPDATE_CHECK=1")
}

// describe says how the probe ended: "exit status N" or the error.
func (p probeResult) describe() string {
	if p.err != nil {
		return p.err.Error()
	}
	if p.code < 0 {
		return "did not exit normally (killed by a signal)"
	}
	if p.code > 128 {
		return fmt.Sprintf("exit status %d (killed by signal %d)", p.code, p.code-128)
	}
	return fmt.Sprintf("exit status %d", p.code)
}

// quote is ": <first line of output>", or "" when it printed nothing.
func (p probeResult) quote() string {
	out := strings.TrimSpace(p.out)
	if out == "" {
		return ""
	}
	return ": " + strings.TrimSuffix(firstLine(out), ".")
}
