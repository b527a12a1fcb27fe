package landlock

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agent-sandbox/agent-sandbox/internal/diag"
)

// limitsEnv carries the weaker sandbox's resource limits to the
// trampoline, which sets them and drops the variable before it execs the
// agent.
const limitsEnv = "AGENT_SANDBOX_TRAMPOLINE_LIMITS"

// weakerLimits is limitsEnv for a weaker-sandbox run: the view's limits
// (defaultMaxProcesses, defaultMaxOpenFiles), where the process limit
// counts on top of the processes the user runs already. Without a user
// namespace RLIMIT_NPROC counts every process of the user, so a bare
// 8192 would leave the agent nothing on a busy desktop, while the user's
// session keeps its own limit either way.
func weakerLimits() string {
	return fmt.Sprintf("%s=%d:%d", limitsEnv, userProcesses()+defaultMaxProcesses, defaultMaxOpenFiles)
}

// userProcesses counts the processes (threads included, as RLIMIT_NPROC
// does) of this real user, from /proc; 0 when it cannot.
func userProcesses() uint64 {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	uid := strconv.Itoa(os.Getuid())
	var n uint64
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/status")
		if err != nil {
			continue
		}
		var mine bool
		var threads uint64 = 1
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				mine = len(f) > 0 && f[0] == uid
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
		}
		if mine {
			n += threads
		}
	}
	return n
}

// applyLimits sets the limits limitsEnv names (never raising one) and
// returns env without it.
func applyLimits(env []string, stderr io.Writer) []string {
	out := env[:0:0]
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, limitsEnv+"=")
		if !ok {
			out = append(out, kv)
			continue
		}
		nproc, nofile, _ := strings.Cut(v, ":")
		for _, l := range []struct {
			res  int
			name string
			val  string
		}{{unix.RLIMIT_NPROC, "process count", nproc}, {unix.RLIMIT_NOFILE, "open files", nofile}} {
			want, err := strconv.ParseUint(l.val, 10, 64)
			if err != nil {
				continue
			}
			var r syscall.Rlimit
			if err := syscall.Getrlimit(l.res, &r); err != nil {
				continue
			}
			if r.Cur > want {
				r.Cur = want
			}
			if r.Max > want {
				r.Max = want
			}
			if err := syscall.Setrlimit(l.res, &r); err != nil {
				diag.Warnf(stderr, "cannot limit the agent's %s: %v", l.name, err)
			}
		}
	}
	return out
}
