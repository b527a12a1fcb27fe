package landlock

import (
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotif is struct seccomp_notif; seccompNotifResp is struct
// seccomp_notif_resp (linux/seccomp.h).
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// ConnectAttempt is one connect(2) a listener saw: the address a process
// of the sandbox asked for (IPv4 or IPv6; other families are not
// reported).
type ConnectAttempt struct {
	Addr netip.AddrPort
}

// NotifyLoop serves the connect(2) listener of ConfineThread until it
// fails (every process of the sandbox gone, or the listener closed): each
// connect proceeds unchanged (the kernel decides it, after the filter:
// SECCOMP_USER_NOTIF_FLAG_CONTINUE), and the IPv4 and IPv6 destinations
// are handed to seen. It only records: the address is read from the
// process's memory, which the process could change between the read and
// the kernel's own (so it must never decide anything).
func NotifyLoop(listener int, seen func(ConnectAttempt)) error {
	for {
		// Wait for a request; the listener hangs up once no process
		// uses the filter any more.
		pfd := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return err
		}
		if pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && pfd[0].Revents&unix.POLLIN == 0 {
			return nil
		}
		var req seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&req))); errno != 0 {
			if errno == unix.EINTR {
				continue
			}
			if errno == unix.ENOENT {
				continue // the process died before it was received (poll waits again)
			}
			return errno
		}
		addr, ok := readSockaddr(int(req.pid), req.args[1], req.args[2])
		resp := seccompNotifResp{id: req.id, flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		// The reply lets the system call go on; the address read above
		// is valid only if the request still is.
		valid := true
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&req.id))); errno != 0 {
			valid = false
		}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp))); errno != 0 && errno != unix.ENOENT {
			return errno
		}
		if ok && valid {
			seen(ConnectAttempt{Addr: addr})
		}
	}
}

// readSockaddr reads an IPv4 or IPv6 socket address of length n at ptr in
// process pid's memory.
func readSockaddr(pid int, ptr, n uint64) (netip.AddrPort, bool) {
	if n < 2 || n > 128 {
		return netip.AddrPort{}, false
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return netip.AddrPort{}, false
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, int64(ptr)); err != nil {
		return netip.AddrPort{}, false
	}
	family := binary.NativeEndian.Uint16(b[:2])
	switch {
	case family == unix.AF_INET && n >= 8:
		port := binary.BigEndian.Uint16(b[2:4])
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case family == unix.AF_INET6 && n >= 24:
		port := binary.BigEndian.Uint16(b[2:4])
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port), true
	}
	return netip.AddrPort{}, false
}
