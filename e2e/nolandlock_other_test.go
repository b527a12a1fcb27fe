//go:build !linux

package e2e

import (
	"fmt"
	"os"
)

// noLandlockExecVar is Linux's (nolandlock_linux_test.go): the wrapper
// that fails Landlock's system calls.
const noLandlockExecVar = "AGENT_SANDBOX_E2E_NOLANDLOCK_EXEC"

// noLandlockExec is Linux only.
func noLandlockExec() {
	fmt.Fprintln(os.Stderr, noLandlockExecVar+": Linux only")
	os.Exit(2)
}
