//go:build linux

package checkpoint

import (
	"container/heap"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A walk records the tree in one order, one directory after another,
// but reads directories ahead of itself: when a directory has been read
// (its names and their lstats), its subdirectories are opened (openat
// with O_NOFOLLOW from its descriptor, as the walk opens them) and read
// by a few workers while the walk records what comes before them. The
// walk takes a directory that no worker has started itself. What a
// directory holds is still read once, through the descriptor the walk
// records it from; only the order of the reads changes. At most
// prefetchMax directories are open ahead of the walk.

const prefetchMax = 256

// dirRead is one directory of the walk: open (fd) or not (openErr),
// then read (names in byte order, their lstats, and the subdirectories
// opened ahead).
type dirRead struct {
	rel     string
	fd      int
	openErr error
	// st is the directory's lstat, as its parent's read found it (the
	// workdir's: an fstat of fd).
	st unix.Stat_t
	// kept: fd is not the walk's to close (the workdir's descriptor).
	kept bool
	// token: this directory holds one of the prefetcher's tokens.
	token bool

	state atomic.Int32 // 0 waiting, 1 taken by the walk or a worker
	ready chan struct{}
	names []string
	sts   []statted
	kids  []*dirRead // by index of names: the subdirectories opened ahead
	err   error      // reading the directory
	used  bool       // the walk is done with it
}

// prefetcher is the walk's read-ahead.
type prefetcher struct {
	t       *taker
	mu      sync.Mutex
	cond    *sync.Cond
	queue   walkHeap // the directories opened ahead and not taken, first in walk order first
	quit    bool
	tokens  atomic.Int32
	aborted atomic.Bool
	wg      sync.WaitGroup
	all     []*dirRead
}

func newPrefetcher(t *taker) *prefetcher {
	p := &prefetcher{t: t}
	p.cond = sync.NewCond(&p.mu)
	p.tokens.Store(prefetchMax)
	for i := 0; i < statWorkers; i++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				d := p.next()
				if d == nil {
					return
				}
				if d.state.CompareAndSwap(0, 1) {
					if !p.aborted.Load() {
						p.read(d)
					}
					close(d.ready)
				}
			}
		}()
	}
	return p
}

// get makes sure d has been read (reading it when no worker has started).
func (p *prefetcher) get(d *dirRead) {
	if d.ready == nil {
		d.ready = make(chan struct{})
	}
	if d.state.CompareAndSwap(0, 1) {
		p.read(d)
		close(d.ready)
		return
	}
	<-d.ready
}

// open opens the subdirectory name of the directory dirfd for the walk
// (one that was not opened ahead).
func (p *prefetcher) open(dirfd int, name, rel string, st *unix.Stat_t) *dirRead {
	d := &dirRead{rel: rel, fd: -1, st: *st}
	d.fd, d.openErr = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if d.openErr != nil {
		d.fd = -1
	}
	return d
}

// done closes d once the walk has recorded it.
func (p *prefetcher) done(d *dirRead) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d.used = true
	if d.fd >= 0 && !d.kept {
		unix.Close(d.fd)
		d.fd = -1
	}
	if d.token {
		d.token = false
		p.tokens.Add(1)
	}
}

// read reads the directory d and opens ahead the subdirectories the walk
// will enter.
func (p *prefetcher) read(d *dirRead) {
	if d.fd < 0 {
		return
	}
	if names, ok := p.t.listing(d); ok {
		d.names = names
	} else {
		dup, err := unix.Dup(d.fd)
		if err != nil {
			d.err = err
			return
		}
		df := os.NewFile(uintptr(dup), d.rel)
		d.names, d.err = df.Readdirnames(-1)
		df.Close()
		if d.err != nil {
			return
		}
		sort.Strings(d.names)
	}
	d.sts = statAll(d.fd, d.names)
	d.kids = make([]*dirRead, len(d.names))
	for i, name := range d.names {
		if d.sts[i].err != nil || d.sts[i].st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		rel := name
		if d.rel != "" {
			rel = d.rel + "/" + name
		}
		// The walk's own tests, in its order: skipped and ignored
		// directories are not opened.
		if p.t.skipSet[rel] || strings.Count(rel, "/") >= MaxDepth || p.t.rules.ignored(rel, true) {
			continue
		}
		if p.aborted.Load() || !p.take() {
			return
		}
		k := p.open(d.fd, name, rel, &d.sts[i].st)
		k.token = true
		k.ready = make(chan struct{})
		p.mu.Lock()
		p.all = append(p.all, k)
		p.mu.Unlock()
		d.kids[i] = k
		if k.openErr == nil {
			p.mu.Lock()
			heap.Push(&p.queue, k)
			p.mu.Unlock()
			p.cond.Signal()
		}
	}
}

// next is the first directory in walk order that is queued and not
// taken, waiting for one; nil once the prefetcher stops.
func (p *prefetcher) next() *dirRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for p.queue.Len() > 0 {
			d := heap.Pop(&p.queue).(*dirRead)
			if d.state.Load() == 0 {
				return d
			}
		}
		if p.quit {
			return nil
		}
		p.cond.Wait()
	}
}

// walkHeap orders directories as the walk enters them.
type walkHeap []*dirRead

func (h walkHeap) Len() int           { return len(h) }
func (h walkHeap) Less(i, j int) bool { return cmpWalk(h[i].rel, h[j].rel) < 0 }
func (h walkHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }

// Push adds x (a *dirRead).
func (h *walkHeap) Push(x any) { *h = append(*h, x.(*dirRead)) }

// Pop removes the last element.
func (h *walkHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// take takes a token (false when prefetchMax directories are ahead).
func (p *prefetcher) take() bool {
	for {
		n := p.tokens.Load()
		if n <= 0 {
			return false
		}
		if p.tokens.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// stop ends the read-ahead and closes what the walk did not take (a walk
// that stopped on an error).
func (p *prefetcher) stop() {
	p.aborted.Store(true)
	p.mu.Lock()
	p.quit = true
	p.mu.Unlock()
	p.cond.Broadcast()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.all {
		if !d.used && d.fd >= 0 {
			unix.Close(d.fd)
			d.fd = -1
		}
	}
}
