// Package session is a run's control channel: the Unix socket through
// which the user reaches a running sandbox (agent-sandbox exec, ps,
// allow, stop), and the records a detached session (agent-sandbox start)
// keeps beside it: its log while it runs, its findings once it has ended
// (stop.go).
//
// The host-side process that supervises a run (internal/launch's
// Lifecycle) serves it. The socket is bound to a path in agent-sandbox's
// state root, $XDG_STATE_HOME/agent-sandbox/sessions/ID/control (0600, in
// a 0700 directory), never to an abstract name (a view with an open
// network shares the host's abstract namespace). No grant, read-only
// grants included, may overlap the sessions directory (internal/grant),
// so the agent, which runs as the same uid, cannot reach the socket by
// its path in the view; the weaker sandbox's seccomp filter refuses Unix
// sockets altogether. Where the agent could still connect to it (nono on
// a kernel whose Landlock cannot confine Unix sockets by path), it cannot
// read the session's token (the same directory, 0600, outside every
// grant), which every request carries: a connection without it is
// refused before anything else is read.
//
// The protocol is versioned, length-prefixed JSON (a 4-byte big-endian
// length, then one object), over a stream socket; the caller's standard
// streams travel with an exec request as SCM_RIGHTS descriptors, or, with
// a terminal request, none go in and the master of a pty of the
// sandbox's comes back with the first answer.
//
// An engine that starts exec's commands in a process of its own (the
// namespace view's init) may serve exec itself on the session's exec
// socket, beside the control socket, with the same modes and token
// (Server.ListenExec, ServeExec): the caller then reaches that process
// directly (DialExec), without the supervisor in between.
package session

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Version is the protocol's version: a request of another is refused.
const Version = 1

// DirName is the directory of the state root that holds one directory per
// live session.
const DirName = "sessions"

// maxFrame bounds one message (a command line of an exec request fits).
const maxFrame = 1 << 20

// Info describes a live session (agent-sandbox ps).
type Info struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// Folder is the agent folder's directory; "" for a built-in (or
	// `run -- CMD`, whose policy is the built-in shell's).
	Folder  string    `json:"folder,omitempty"`
	Workdir string    `json:"workdir"`
	Engine  string    `json:"engine"`
	Network string    `json:"network"`
	Started time.Time `json:"started"`
	// Pid is the supervisor's host pid.
	Pid int `json:"pid"`
	// Processes counts the session's own processes: the agent (while
	// it runs) and the commands exec started that still run.
	Processes int `json:"processes"`
	// Allowed and Refused are the egress broker's counts so far.
	Allowed int `json:"allowed"`
	Refused int `json:"refused"`
	// Detached says that the session has no agent process
	// (agent-sandbox start): its supervisor runs detached, and its
	// after-run findings are kept for agent-sandbox stop (FindingsPath).
	Detached bool `json:"detached,omitempty"`
	// IdleTimeout, for a detached session, is how long it lasts with no
	// exec'd process (a Go duration).
	IdleTimeout string `json:"idle_timeout,omitempty"`
}

// Request is one message from a client.
type Request struct {
	V     int    `json:"v"`
	Token string `json:"token"`
	// Op is "info", "exec", "signal" (after an exec), "allow" or
	// "stop".
	Op     string   `json:"op"`
	Argv   []string `json:"argv,omitempty"`
	Signal int      `json:"signal,omitempty"`
	Host   string   `json:"host,omitempty"`
	// TTY asks exec for a terminal of its own, Rows x Cols: a pty of
	// the session's, whose master comes back with the first answer; the
	// request then carries no descriptors.
	TTY  bool   `json:"tty,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
}

// Response is one message from the supervisor.
type Response struct {
	V     int    `json:"v"`
	Error string `json:"error,omitempty"`
	Info  *Info  `json:"info,omitempty"`
	// Pid is the exec'd process's pid in the sandbox (exec's first
	// answer); Exit its wait status-derived exit code (the last).
	Pid  int    `json:"pid,omitempty"`
	Exit *int   `json:"exit,omitempty"`
	Note string `json:"note,omitempty"`
}

// Proc is a process started by Handlers.Exec.
type Proc interface {
	// Pid is its pid (in the sandbox's PID namespace).
	Pid() int
	// Signal sends it sig.
	Signal(sig int) error
	// Wait returns its exit code (128+N when killed by signal N).
	Wait() int
}

// Handlers are what a session's engine can do at run time. A nil
// function is an operation the engine does not support: the request is
// refused with Unsupported's reason.
type Handlers struct {
	// Info fills in the live parts of i (processes, broker counts).
	Info func(i *Info)
	// Exec starts argv in the sandbox with stdio as its standard streams.
	Exec func(argv []string, stdio []*os.File) (Proc, error)
	// ExecTTY starts argv in the sandbox with a terminal of its own (a
	// pty of the sandbox's, rows x cols) and returns the pty's master.
	ExecTTY func(argv []string, rows, cols uint16) (Proc, *os.File, error)
	// Allow adds host to the running session's allow list; the answer
	// says what was added.
	Allow func(host string) (string, error)
	// Stop asks the session to end (agent-sandbox stop): its processes
	// get SIGTERM, then SIGKILL after a grace period; the session's end
	// (quiesce, audit, scan) follows as after its last process. It
	// returns once asked, not once ended.
	Stop func() error
	// Unsupported says why this engine cannot exec or allow ("nono
	// alone cannot ..."), for the refusals.
	Unsupported map[string]string
}

// ErrNoTTY is the refusal of a terminal request by an engine whose exec
// has no terminal of its own to give (sbx exec takes the caller's): the
// client asks again with its standard streams, or fails with -t.
const ErrNoTTY = "exec -t: this engine gives the command no terminal of its own (it gets yours when you run exec at one); run exec without -t"

// Dir is the sessions directory of the state root stateRoot.
func Dir(stateRoot string) string { return filepath.Join(stateRoot, DirName) }

// Server is one session's control channel.
type Server struct {
	info Info
	h    Handlers
	dir  string
	tok  string
	l    *net.UnixListener
	wg   sync.WaitGroup
	mu   sync.Mutex
	live map[net.Conn]bool // true: an exec that runs
	// execOnly: the exec socket, served by the engine (ServeExec).
	execOnly bool
}

// ExecSocket is the name of a session's exec socket, beside its control
// socket: where the engine serves exec itself (the namespace view's init,
// which starts the command: one process fewer between the caller and
// the command). It takes exec requests only, with the same token.
const ExecSocket = "exec"

// ListenExec binds the session's exec socket (0600, in the session's
// directory, as the control socket) and returns its listener, for the
// engine to serve with [ServeExec], and the session's token. The caller
// closes its copy of the file once handed over; RemoveExec takes the
// socket away again (clients then use the control socket).
func (s *Server) ListenExec() (*os.File, string, error) {
	sock := filepath.Join(s.dir, ExecSocket)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock + ".new", Net: "unix"})
	if err != nil {
		return nil, "", fmt.Errorf("session: listening on %s: %w", sock, err)
	}
	l.SetUnlinkOnClose(false)
	defer l.Close()
	if err := os.Chmod(sock+".new", 0o600); err != nil {
		os.Remove(sock + ".new")
		return nil, "", fmt.Errorf("session: %w", err)
	}
	f, err := l.File()
	if err == nil {
		err = os.Rename(sock+".new", sock)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		os.Remove(sock + ".new")
		return nil, "", fmt.Errorf("session: listening on %s: %w", sock, err)
	}
	return f, s.tok, nil
}

// RemoveExec removes the exec socket (its engine could not serve it).
func (s *Server) RemoveExec() { os.Remove(filepath.Join(s.dir, ExecSocket)) }

// ServeExec serves a session's exec socket l (from ListenExec) with h's
// exec handlers, checking token as the control socket does, until l is
// closed. Other requests are refused: they go to the control socket. A
// Proc that has a Reported method is told once its exit status has been
// written to the caller.
func ServeExec(l *net.UnixListener, token string, h Handlers) {
	s := &Server{h: h, tok: token, l: l, live: map[net.Conn]bool{}, execOnly: true}
	s.wg.Add(1)
	s.serve()
}

// NewID returns a fresh session id.
func NewID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Open creates the session's directory under stateRoot, its token and its
// socket, and serves requests with h until Close.
func Open(stateRoot string, info Info, h Handlers) (*Server, error) {
	base := Dir(stateRoot)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("session: creating %s: %w", base, err)
	}
	if err := os.Chmod(base, 0o700); err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	if info.ID == "" {
		info.ID = NewID()
	}
	dir := filepath.Join(base, info.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session: creating %s: %w", dir, err)
	}
	var tb [32]byte
	if _, err := rand.Read(tb[:]); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{info: info, h: h, dir: dir, tok: hex.EncodeToString(tb[:]), live: map[net.Conn]bool{}}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(s.tok), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("session: %w", err)
	}
	info.Pid = os.Getpid()
	if b, err := json.Marshal(info); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "info.json"), b, 0o600)
	}
	// Bound under another name and renamed once it listens: a socket
	// path that exists always listens (or its supervisor is gone), so
	// List never mistakes a session that is starting for a stale one.
	// The socket is made 0600 by chmod after the bind, never by the
	// umask: the umask is the process's, and the guard creates its
	// quarantine directories concurrently (a 0177 umask made them 0600,
	// untraversable). Until the chmod the socket lies in the 0700
	// directory, which no one else can enter.
	sock := filepath.Join(dir, "control")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock + ".new", Net: "unix"})
	if err == nil {
		err = os.Chmod(sock+".new", 0o600)
	}
	if err == nil {
		err = os.Rename(sock+".new", sock)
	}
	if err != nil {
		if l != nil {
			l.Close()
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("session: listening on %s: %w", sock, err)
	}
	l.SetUnlinkOnClose(false)
	s.l = l
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// ID is the session's id.
func (s *Server) ID() string { return s.info.ID }

// Close stops serving, ends the open connections and removes the
// session's directory. It is called once the session's last process has
// ended: an exec's connection is left to send its command's status.
func (s *Server) Close() {
	if s == nil {
		return
	}
	s.l.Close()
	s.mu.Lock()
	for c, exec := range s.live {
		if !exec {
			c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	os.RemoveAll(s.dir)
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.l.AcceptUnix()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.live[c] = false
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
			s.mu.Lock()
			delete(s.live, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// handle answers one connection: one request, or an exec and its
// signals.
func (s *Server) handle(c *net.UnixConn) {
	req, fds, err := readFrame(c)
	defer closeAll(fds)
	if err != nil {
		return
	}
	if req.V != Version {
		_ = writeFrame(c, Response{V: Version, Error: fmt.Sprintf("protocol version %d is not this session's (%d): use the same agent-sandbox as the session", req.V, Version)}, nil)
		return
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.tok)) != 1 {
		_ = writeFrame(c, Response{V: Version, Error: "not this session's token"}, nil)
		return
	}
	if s.execOnly && req.Op != "exec" {
		_ = writeFrame(c, Response{V: Version, Error: fmt.Sprintf("%q goes to the session's control socket, not its exec socket", req.Op)}, nil)
		return
	}
	switch req.Op {
	case "info":
		i := s.info
		i.Pid = os.Getpid()
		if s.h.Info != nil {
			s.h.Info(&i)
		}
		_ = writeFrame(c, Response{V: Version, Info: &i}, nil)
	case "exec":
		s.exec(c, req, fds)
	case "allow":
		if s.h.Allow == nil {
			_ = writeFrame(c, Response{V: Version, Error: s.unsupported("allow")}, nil)
			return
		}
		note, err := s.h.Allow(req.Host)
		if err != nil {
			_ = writeFrame(c, Response{V: Version, Error: err.Error()}, nil)
			return
		}
		_ = writeFrame(c, Response{V: Version, Note: note}, nil)
	case "stop":
		s.stop(c)
	default:
		_ = writeFrame(c, Response{V: Version, Error: fmt.Sprintf("unknown request %q", req.Op)}, nil)
	}
}

func (s *Server) unsupported(op string) string {
	if why := s.h.Unsupported[op]; why != "" {
		return why
	}
	return fmt.Sprintf("%s: not supported by this engine yet", op)
}

func (s *Server) exec(c *net.UnixConn, req Request, fds []*os.File) {
	switch {
	case s.h.Exec == nil:
		_ = writeFrame(c, Response{V: Version, Error: s.unsupported("exec")}, nil)
		return
	case req.TTY && s.h.ExecTTY == nil:
		_ = writeFrame(c, Response{V: Version, Error: ErrNoTTY}, nil)
		return
	case len(req.Argv) == 0 || (!req.TTY && len(fds) != 3) || (req.TTY && len(fds) != 0):
		_ = writeFrame(c, Response{V: Version, Error: "exec needs a command and three descriptors (stdin, stdout, stderr), or a terminal request and none"}, nil)
		return
	}
	s.mu.Lock()
	s.live[c] = true
	s.mu.Unlock()
	var p Proc
	var master *os.File
	var err error
	if req.TTY {
		p, master, err = s.h.ExecTTY(req.Argv, req.Rows, req.Cols)
	} else {
		p, err = s.h.Exec(req.Argv, fds)
	}
	if err != nil {
		_ = writeFrame(c, Response{V: Version, Error: err.Error()}, nil)
		return
	}
	var pass []int
	if master != nil {
		pass = []int{int(master.Fd())}
	}
	err = writeFrame(c, Response{V: Version, Pid: p.Pid()}, pass)
	if master != nil {
		master.Close() // the client's now: the supervisor relays nothing
	}
	if err != nil {
		_ = p.Signal(int(unix.SIGHUP))
	}
	// The caller's signals, until it hangs up (then the command gets
	// SIGHUP, as from a closed terminal) or the command ends.
	done := make(chan struct{})
	go func() {
		for {
			r, extra, err := readFrame(c)
			closeAll(extra)
			if err != nil {
				select {
				case <-done:
				default:
					_ = p.Signal(int(unix.SIGHUP))
				}
				return
			}
			if r.Op == "signal" && r.Signal > 0 && r.Signal < 65 {
				_ = p.Signal(r.Signal)
			}
		}
	}()
	code := p.Wait()
	close(done)
	_ = writeFrame(c, Response{V: Version, Exit: &code}, nil)
	if r, ok := p.(interface{ Reported() }); ok {
		r.Reported()
	}
}

// readFrame reads one length-prefixed request and the descriptors sent
// with it.
func readFrame(c *net.UnixConn) (Request, []*os.File, error) {
	var req Request
	fds, err := readMsg(c, &req)
	return req, fds, err
}

// readMsg reads one length-prefixed message into v and the descriptors
// sent with it (at most four).
func readMsg(c *net.UnixConn, v any) ([]*os.File, error) {
	hdr := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(hdr, oob)
	if err != nil {
		return nil, err
	}
	var fds []*os.File
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if raw, err := unix.ParseUnixRights(&m); err == nil {
				for _, fd := range raw {
					unix.CloseOnExec(fd)
					fds = append(fds, os.NewFile(uintptr(fd), "passed"))
				}
			}
		}
	}
	if n < 4 {
		if _, err := io.ReadFull(c, hdr[n:]); err != nil {
			return fds, err
		}
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > maxFrame {
		return fds, errors.New("message too large")
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return fds, err
	}
	return fds, json.Unmarshal(body, v)
}

// writeFrame writes v length-prefixed, with fds (SCM_RIGHTS).
func writeFrame(c *net.UnixConn, v any, fds []int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	msg := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(msg, uint32(len(b)))
	copy(msg[4:], b)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err = c.WriteMsgUnix(msg, oob, nil)
	return err
}

func readResponse(c *net.UnixConn) (Response, error) {
	var r Response
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(c, hdr); err != nil {
		return r, err
	}
	size := binary.BigEndian.Uint32(hdr)
	if size > maxFrame {
		return r, errors.New("message too large")
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return r, err
	}
	return r, json.Unmarshal(body, &r)
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// Client is a connection to one session.
type Client struct {
	c   *net.UnixConn
	tok string
	dir string
}

// Dial connects to session id under stateRoot.
func Dial(stateRoot, id string) (*Client, error) {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil, fmt.Errorf("%q is not a session id", id)
	}
	dir := filepath.Join(Dir(stateRoot), id)
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		return nil, fmt.Errorf("no session %s (agent-sandbox ps lists the live ones)", id)
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, "control"), Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("session %s has ended (its supervisor does not answer: %v)", id, err)
	}
	return &Client{c: c, tok: string(tok), dir: dir}, nil
}

// DialExec connects to session id under stateRoot for an exec: to its
// exec socket where its engine serves one, else to its control socket.
func DialExec(stateRoot, id string) (*Client, error) {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil, fmt.Errorf("%q is not a session id", id)
	}
	dir := filepath.Join(Dir(stateRoot), id)
	if tok, err := os.ReadFile(filepath.Join(dir, "token")); err == nil {
		if c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(dir, ExecSocket), Net: "unix"}); err == nil {
			return &Client{c: c, tok: string(tok), dir: dir}, nil
		}
	}
	return Dial(stateRoot, id)
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

func (c *Client) call(req Request) (Response, error) {
	req.V, req.Token = Version, c.tok
	if err := writeFrame(c.c, req, nil); err != nil {
		return Response{}, err
	}
	r, err := readResponse(c.c)
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	return r, err
}

// Info asks the session for its description.
func (c *Client) Info() (Info, error) {
	r, err := c.call(Request{Op: "info"})
	if err != nil {
		return Info{}, err
	}
	if r.Info == nil {
		return Info{}, errors.New("the session sent no description")
	}
	return *r.Info, nil
}

// Allow asks the session to allow host.
func (c *Client) Allow(host string) (string, error) {
	r, err := c.call(Request{Op: "allow", Host: host})
	return r.Note, err
}

// Exec starts argv in the session with stdio (three files) as its
// standard streams; signals received on sigs are passed on to it. It
// returns the command's exit code.
func (c *Client) Exec(argv []string, stdio [3]*os.File, sigs <-chan os.Signal) (int, error) {
	fds := []int{int(stdio[0].Fd()), int(stdio[1].Fd()), int(stdio[2].Fd())}
	if err := writeFrame(c.c, Request{V: Version, Token: c.tok, Op: "exec", Argv: argv}, fds); err != nil {
		return 0, err
	}
	r, err := readResponse(c.c)
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err != nil {
		return 0, err
	}
	return c.Wait(sigs)
}

// ExecTTY starts argv in the session with a terminal of its own, a pty
// of the session's sized rows x cols, and returns the pty's master (the
// caller relays it to the user's terminal, and sets its size); Wait then
// returns the command's exit code. No descriptor of the caller's enters
// the session.
func (c *Client) ExecTTY(argv []string, rows, cols uint16) (*os.File, error) {
	if err := writeFrame(c.c, Request{V: Version, Token: c.tok, Op: "exec", Argv: argv, TTY: true, Rows: rows, Cols: cols}, nil); err != nil {
		return nil, err
	}
	var r Response
	fds, err := readMsg(c.c, &r)
	if err == nil && r.Error != "" {
		err = errors.New(r.Error)
	}
	if err == nil && len(fds) != 1 {
		err = fmt.Errorf("the session sent %d descriptors for the terminal, not one", len(fds))
	}
	if err != nil {
		closeAll(fds)
		return nil, err
	}
	return fds[0], nil
}

// Wait passes signals received on sigs on to the command an exec started,
// until it ends, and returns its exit code.
func (c *Client) Wait(sigs <-chan os.Signal) (int, error) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case s := <-sigs:
				if n, ok := s.(unix.Signal); ok {
					_ = writeFrame(c.c, Request{V: Version, Token: c.tok, Op: "signal", Signal: int(n)}, nil)
				}
			case <-stop:
				return
			}
		}
	}()
	for {
		r, err := readResponse(c.c)
		if err != nil {
			return 0, fmt.Errorf("the session ended before the command's status came: %w", err)
		}
		if r.Exit != nil {
			return *r.Exit, nil
		}
	}
}

// List returns the live sessions under stateRoot, oldest first: those
// whose supervisor answers on the socket (a directory left by a
// supervisor that died is removed).
func List(stateRoot string) []Info {
	ents, err := os.ReadDir(Dir(stateRoot))
	if err != nil {
		return nil
	}
	var out []Info
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		c, err := Dial(stateRoot, e.Name())
		if err != nil {
			removeStale(filepath.Join(Dir(stateRoot), e.Name()), err)
			continue
		}
		_ = c.c.SetDeadline(time.Now().Add(2 * time.Second))
		i, err := c.Info()
		c.Close()
		if err == nil {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Started.Before(out[b].Started) })
	return out
}

// Find returns the live session named by ref: its id, or the agent of
// exactly one live session.
func Find(stateRoot, ref string) (Info, error) {
	live := List(stateRoot)
	var byAgent []Info
	for _, i := range live {
		if i.ID == ref {
			return i, nil
		}
		if i.Agent == ref {
			byAgent = append(byAgent, i)
		}
	}
	switch len(byAgent) {
	case 1:
		return byAgent[0], nil
	case 0:
		return Info{}, fmt.Errorf("no live session %q (agent-sandbox ps lists the live ones)", ref)
	}
	ids := make([]string, len(byAgent))
	for k, i := range byAgent {
		ids[k] = i.ID
	}
	return Info{}, fmt.Errorf("%d sessions of %s are live (%s): name one by its id", len(byAgent), ref, strings.Join(ids, ", "))
}

// removeStale removes the directory of a session whose socket refused a
// connection (err) when its supervisor is gone too: a supervisor that
// was killed (SIGKILL) leaves it behind.
func removeStale(dir string, err error) {
	if !strings.Contains(err.Error(), "connection refused") {
		return
	}
	if _, serr := os.Stat(filepath.Join(dir, "control")); serr != nil {
		return
	}
	var i Info
	if b, rerr := os.ReadFile(filepath.Join(dir, "info.json")); rerr == nil && json.Unmarshal(b, &i) == nil && i.Pid > 0 {
		if unix.Kill(i.Pid, 0) == nil || errors.Is(unix.Kill(i.Pid, 0), unix.EPERM) {
			return // its supervisor (or a process of that pid) lives: not removed
		}
	}
	os.RemoveAll(dir)
}
