package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// canSplice: this system copies between sockets in the kernel.
const canSplice = true

// The broker's own splice, not Go's (net.TCPConn.ReadFrom): Go's takes a
// pipe before it waits for bytes and holds it while it waits, and sizes
// every pipe 1 MiB. An idle tunnel then held two pipes (four descriptors),
// and a user's pipes are accounted per user (fs.pipe-user-pages-soft,
// 16,384 pages): past 64 such pipes, every pipe any process of that user
// creates (the agent's `cmd | cmd`, the user's shells) got 8 KiB instead of
// 64 KiB. Here a tunnel waits on its socket with no pipe and uses one from
// a small pool only while bytes move. A pipe of 1 MiB costs the broker less
// CPU per byte than the default 64 KiB (BenchmarkThroughput's cpu-µs/MiB),
// so the first bigPipes pipes the broker holds at once are made that big
// (a quarter of the soft limit at most), any more keep the default.

// spliceMax bounds one splice call: a big pipe's size.
const spliceMax = 1 << 20

const (
	maxIdlePipes = 4  // pipes kept for reuse between bursts
	bigPipes     = 16 // pipes of spliceMax bytes held at once, at most
)

// maxPipes bounds the pipes held at once, in use or kept: a pipe holds
// bytes while its destination does not read, and an agent can open many
// tunnels and read none. 16 big pipes and 240 of the default size are
// 7,936 pages, under half the user's soft limit; past the bound a tunnel
// copies in user space (errNoPipe). A variable for the tests.
var maxPipes = 256

var pipePool struct {
	sync.Mutex
	free []pipe // empty pipes kept for reuse
	big  int    // pipes of spliceMax bytes open (in use or free)
	open int    // pipes open (in use or free)
}

// pipe is one pipe: its read and write end (non-blocking) and whether it
// was made big.
type pipe struct {
	fd  [2]int
	big bool
}

// pipe2 makes a pipe (a variable: the tests make it fail).
var pipe2 = unix.Pipe2

// getPipe returns an empty pipe.
func getPipe() (pipe, error) {
	pipePool.Lock()
	defer pipePool.Unlock()
	if k := len(pipePool.free); k > 0 {
		p := pipePool.free[k-1]
		pipePool.free = pipePool.free[:k-1]
		return p, nil
	}
	var p pipe
	if pipePool.open >= maxPipes {
		return p, fmt.Errorf("%d pipes in use", maxPipes)
	}
	if err := pipe2(p.fd[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return p, os.NewSyscallError("pipe2", err)
	}
	pipePool.open++
	if pipePool.big < bigPipes {
		// Refused past the user's soft limit: the pipe keeps its size.
		if _, err := unix.FcntlInt(uintptr(p.fd[0]), unix.F_SETPIPE_SZ, spliceMax); err == nil {
			p.big = true
			pipePool.big++
		}
	}
	return p, nil
}

// putPipe keeps an empty pipe for reuse, or closes it; a big pipe takes
// the place of a kept one of the default size.
func putPipe(p pipe) {
	pipePool.Lock()
	defer pipePool.Unlock()
	if len(pipePool.free) < maxIdlePipes {
		pipePool.free = append(pipePool.free, p)
		return
	}
	if p.big {
		for i, q := range pipePool.free {
			if !q.big {
				pipePool.free[i], p = p, q
				break
			}
		}
	}
	closePipeLocked(p)
}

// closePipe closes a pipe that still holds bytes.
func closePipe(p pipe) {
	pipePool.Lock()
	defer pipePool.Unlock()
	closePipeLocked(p)
}

func closePipeLocked(p pipe) {
	unix.Close(p.fd[0])
	unix.Close(p.fd[1])
	pipePool.open--
	if p.big {
		pipePool.big--
	}
}

// IdlePipes counts the pipes the broker keeps for reuse between bursts
// (at most 4, two descriptors each): they outlive the tunnels that used
// them by design, and a check for leaked descriptors leaves them out.
func IdlePipes() int {
	pipePool.Lock()
	defer pipePool.Unlock()
	return len(pipePool.free)
}

// spliceStep moves up to max bytes from src to dst in the kernel, waiting
// for src whenever it has nothing (its read deadline applies, and its
// error is returned as it is: isTimeout knows it), and returns the bytes
// moved. It returns eof with nothing moved when src ended. A write to dst
// that would block waits for dst (dst's write deadline applies). moved,
// when not nil, is called each time bytes have reached dst (a tunnel's
// activity, which keeps its other direction from timing out while this
// one trickles). errNoPipe says no pipe could be had: the caller copies
// the rest in user space. While it waits for src it holds no pipe: a pipe
// is taken for each try and given back when src had nothing.
func spliceStep(dst, src *net.TCPConn, max int64, moved func()) (n int64, eof bool, err error) {
	rs, err := src.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	rd, err := dst.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var p pipe
	held, inPipe := false, 0
	defer func() {
		switch {
		case !held:
		case inPipe == 0:
			putPipe(p)
		default:
			closePipe(p) // bytes that could not be delivered
		}
	}()
	for n < max {
		// Fill: what src holds, once it holds something.
		var m int64
		var serr error
		err = rs.Read(func(fd uintptr) bool {
			if !held {
				if p, serr = getPipe(); serr != nil {
					serr = fmt.Errorf("%w: %v", errNoPipe, serr)
					return true
				}
				held = true
			}
			for {
				m, serr = unix.Splice(int(fd), nil, p.fd[1], nil, int(min(max-n, spliceMax)), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if serr != unix.EINTR {
					break
				}
			}
			if serr == unix.EAGAIN {
				putPipe(p)
				held = false
				return false // wait for src with no pipe held
			}
			return true
		})
		switch {
		case err != nil:
			return n, false, err
		case errors.Is(serr, errNoPipe):
			return n, false, serr
		case serr == unix.EINVAL && n == 0:
			// A socket splice does not take (Go's splice copied in user
			// space then too).
			return 0, false, fmt.Errorf("%w: %v", errNoPipe, os.NewSyscallError("splice", serr))
		case serr != nil:
			return n, false, os.NewSyscallError("splice", serr)
		case m == 0:
			return n, n == 0, nil // src ended (after this step's bytes: the next step says so)
		}
		// Drain: all of it to dst, waiting while dst is full.
		inPipe = int(m)
		for inPipe > 0 {
			var w int64
			var werr error
			err = rd.Write(func(fd uintptr) bool {
				for {
					w, werr = unix.Splice(p.fd[0], nil, int(fd), nil, inPipe, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
					if werr != unix.EINTR {
						return werr != unix.EAGAIN
					}
				}
			})
			if err != nil {
				return n, false, err
			}
			if werr != nil {
				return n, false, os.NewSyscallError("splice", werr)
			}
			if w == 0 {
				return n, false, os.NewSyscallError("splice", errors.New("no progress writing to the destination"))
			}
			inPipe -= int(w)
			n += w
		}
		if moved != nil {
			moved()
		}
	}
	return n, false, nil
}
