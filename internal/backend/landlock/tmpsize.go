package landlock

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TmpSize is the bound of the private /tmp, /var/tmp and /dev/shm of a
// run together (one tmpfs) in bytes: agent.toml tmp_size, else a quarter
// of the machine's memory (a tmpfs would otherwise take up to half of it,
// the kernel's default), else 0 (the kernel's default) when the memory
// cannot be read.
func TmpSize(s spec.Spec) int64 {
	if s.TmpSize > 0 {
		return s.TmpSize
	}
	return memTotal() / 4
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unknown; read
// once per process (the tmpfs bounds, the memory bound and --dry-run's
// lines ask it several times per run).
var memTotal = sync.OnceValue(readMemTotal)

func readMemTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
