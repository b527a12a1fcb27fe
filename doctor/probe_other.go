//go:build !unix

package doctor

import "os/exec"

// ownProcessGroup does nothing: process groups are a Unix notion; the
// context still kills the probe itself.
func ownProcessGroup(cmd *exec.Cmd) {}

// kernelRelease is unknown off Unix.
func kernelRelease() string { return "(unknown release)" }
