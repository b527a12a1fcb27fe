//go:build !linux

package broker

import (
	"errors"
	"net"
)

// canSplice: this system has no splice; the broker copies in user space.
const canSplice = false

// spliceStep is never called where canSplice is false.
func spliceStep(dst, src *net.TCPConn, max int64, moved func()) (n int64, eof bool, err error) {
	return 0, false, errors.ErrUnsupported
}

// IdlePipes counts the pipes the broker keeps for reuse: none here.
func IdlePipes() int { return 0 }
