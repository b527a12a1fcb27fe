package view

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/agent-sandbox/agent-sandbox/internal/landlock"
)

// The Config crosses from agent-sandbox to the sandbox init in this
// encoding rather than JSON: encoding/json spends about a millisecond in
// a fresh process building its reflection caches, on the way to every
// start. Every field is written in a fixed order, strings and lists with
// a length first (uvarint); TestCodecCoversConfig fills every field of a
// Config by reflection and fails when one does not survive the round
// trip, so a field added to Config (or to landlock.Policy or Mount) must
// be added here.

// codecMagic starts an encoded Config (and versions the layout).
const codecMagic = "asv5"

// maxCodecLen bounds one string or list length when decoding.
const maxCodecLen = 1 << 24

// Encode returns c in the init's wire format.
func (c Config) Encode() []byte {
	var e encoder
	e.b = append(e.b, codecMagic...)
	e.uint(uint64(len(c.Mounts)))
	for _, m := range c.Mounts {
		e.str(string(m.Kind))
		e.str(m.Path)
		e.str(m.Source)
		e.str(m.Target)
		e.str(m.Upper)
		e.str(m.Work)
		e.bool(m.Optional)
		e.bool(m.Pin)
		e.bool(m.Guarded)
		e.int(m.Size)
	}
	e.str(c.Workdir)
	e.strs(c.Argv)
	e.strs(c.Env)
	e.strs(c.Landlock.ReadExec)
	e.strs(c.Landlock.ReadOnly)
	e.strs(c.Landlock.ReadWrite)
	e.strs(c.Landlock.WriteOnly)
	e.strs(c.Landlock.List)
	e.uint(uint64(c.Landlock.Network))
	e.uint(uint64(len(c.Landlock.AllowTCPConnect)))
	for _, p := range c.Landlock.AllowTCPConnect {
		e.uint(uint64(p))
	}
	e.bool(c.WithoutLandlock)
	e.bool(c.Seccomp.DenyKeyrings)
	e.bool(c.Seccomp.DenyUnixSockets)
	e.bool(c.Seccomp.DenyUserns)
	e.bool(c.Seccomp.DenyHostIPC)
	e.bool(c.Seccomp.NotifyConnect)
	e.str(string(c.Network))
	e.int(int64(c.ProxyPort))
	e.uint(uint64(len(c.ForwardPorts)))
	for _, p := range c.ForwardPorts {
		e.int(int64(p))
	}
	e.bool(c.Inbound)
	e.uint(uint64(len(c.Rlimits)))
	for _, l := range c.Rlimits {
		e.int(int64(l.Resource))
		e.str(l.Name)
		e.uint(l.Soft)
		e.uint(l.Hard)
	}
	e.uint(uint64(len(c.UserLimits)))
	for _, l := range c.UserLimits {
		e.str(l.Name)
		e.int(l.Value)
	}
	e.bool(c.TerminalSignals)
	e.bool(c.SignalChildren)
	e.int(int64(c.Umask))
	e.bool(c.SetUmask)
	e.bool(c.NoAgent)
	return e.b
}

// DecodeConfig parses what [Config.Encode] wrote. It fails on anything
// else: a wrong start, a truncation, a length out of bounds, bytes left
// over.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if len(b) < len(codecMagic) || string(b[:len(codecMagic)]) != codecMagic {
		return c, errors.New("not an agent-sandbox view configuration (wrong start)")
	}
	d := decoder{b: b[len(codecMagic):]}
	n := d.len()
	for i := 0; i < n && d.err == nil; i++ {
		c.Mounts = append(c.Mounts, Mount{
			Kind: Kind(d.str()), Path: d.str(), Source: d.str(), Target: d.str(),
			Upper: d.str(), Work: d.str(), Optional: d.bool(), Pin: d.bool(), Guarded: d.bool(), Size: d.int(),
		})
	}
	c.Workdir = d.str()
	c.Argv = d.strs()
	c.Env = d.strs()
	c.Landlock.ReadExec = d.strs()
	c.Landlock.ReadOnly = d.strs()
	c.Landlock.ReadWrite = d.strs()
	c.Landlock.WriteOnly = d.strs()
	c.Landlock.List = d.strs()
	c.Landlock.Network = landlock.NetMode(d.uint())
	n = d.len()
	for i := 0; i < n && d.err == nil; i++ {
		p := d.uint()
		if p > 65535 {
			d.fail("TCP port %d out of range", p)
		}
		c.Landlock.AllowTCPConnect = append(c.Landlock.AllowTCPConnect, uint16(p))
	}
	c.WithoutLandlock = d.bool()
	c.Seccomp.DenyKeyrings = d.bool()
	c.Seccomp.DenyUnixSockets = d.bool()
	c.Seccomp.DenyUserns = d.bool()
	c.Seccomp.DenyHostIPC = d.bool()
	c.Seccomp.NotifyConnect = d.bool()
	c.Network = Network(d.str())
	c.ProxyPort = int(d.int())
	n = d.len()
	for i := 0; i < n && d.err == nil; i++ {
		c.ForwardPorts = append(c.ForwardPorts, int(d.int()))
	}
	c.Inbound = d.bool()
	n = d.len()
	for i := 0; i < n && d.err == nil; i++ {
		c.Rlimits = append(c.Rlimits, Rlimit{Resource: int(d.int()), Name: d.str(), Soft: d.uint(), Hard: d.uint()})
	}
	n = d.len()
	for i := 0; i < n && d.err == nil; i++ {
		c.UserLimits = append(c.UserLimits, UserLimit{Name: d.str(), Value: d.int()})
	}
	c.TerminalSignals = d.bool()
	c.SignalChildren = d.bool()
	c.Umask = int(d.int())
	c.SetUmask = d.bool()
	c.NoAgent = d.bool()
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the end", len(d.b))
	}
	if d.err != nil {
		return Config{}, d.err
	}
	return c, nil
}

type encoder struct{ b []byte }

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(ss []string) {
	e.uint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// decoder reads an encoded Config; the first error sticks, and every read
// after it returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("reading the view configuration: "+format, args...)
	}
}

func (d *decoder) uint() uint64 { return number(d, binary.Uvarint) }
func (d *decoder) int() int64   { return number(d, binary.Varint) }

// number reads one varint with read (binary.Uvarint or binary.Varint).
func number[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.b)
	if n <= 0 {
		d.fail("truncated or malformed number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// len reads a length: at most maxCodecLen and at most the bytes left (no
// element takes less than one byte).
func (d *decoder) len() int {
	v := d.uint()
	if d.err == nil && (v > maxCodecLen || v > uint64(len(d.b))) {
		d.fail("length %d out of bounds", v)
		return 0
	}
	return int(v)
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail("truncated or malformed flag")
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *decoder) str() string {
	n := d.len()
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) strs() []string {
	n := d.len()
	var out []string
	for i := 0; i < n && d.err == nil; i++ {
		out = append(out, d.str())
	}
	return out
}
