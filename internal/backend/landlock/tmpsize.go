package landlock

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/agent-sandbox/agent-sandbox/internal/spec"
)

// TmpSize is the bound of each private /tmp, /var/tmp and /dev/shm of a
// run in bytes: agent.toml tmp_size, else a quarter of the machine's
// memory (each would otherwise take up to half of it, the kernel's
// default), else 0 (the kernel's default) when the memory cannot be read.
func TmpSize(s spec.Spec) int64 {
	if s.TmpSize > 0 {
		return s.TmpSize
	}
	return memTotal() / 4
}

// memTotal is /proc/meminfo's MemTotal in bytes, 0 when unknown.
func memTotal() int64 {
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

// formatSize writes a size in binary units, as tmp_size takes them.
func formatSize(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.size {
			if n%u.size == 0 {
				return strconv.FormatInt(n/u.size, 10) + u.unit
			}
			return strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64) + u.unit
		}
	}
	return strconv.FormatInt(n, 10)
}
