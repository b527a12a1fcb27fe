//go:build linux && !agentsandbox_abicap

package landlock

// abiCap is the test-only cap on the Landlock ABI (abicap_linux.go): none
// in every ordinary build.
func abiCap() int { return 0 }
