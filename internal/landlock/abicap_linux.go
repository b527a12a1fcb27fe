//go:build linux && agentsandbox_abicap

package landlock

import "strconv"

// testABICap is set at link time in the kernel matrix's test build only
// (e2e/kernels/run.sh: go build -tags agentsandbox_abicap -ldflags
// "-X .../internal/landlock.testABICap=1"): the Landlock ABI the rules are
// planned for is then at most this, so that an ABI 1 kernel's branches
// run on a newer one. Nothing at run time (no variable, no file, no flag)
// sets it, and a build without the tag has no cap at all
// (abicap_off_linux.go).
var testABICap string

// abiCap returns the link-time cap, 0 for none.
func abiCap() int {
	n, err := strconv.Atoi(testABICap)
	if err != nil || n < 1 {
		return 0
	}
	return n
}
