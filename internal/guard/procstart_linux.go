//go:build linux

package guard

import (
	"os"
	"strconv"
	"strings"
)

// procStart is process pid's start time (field 22 of /proc/PID/stat, in
// clock ticks since boot), "" when it does not run: with the pid, it names
// one process, whatever later reuses the number.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}
