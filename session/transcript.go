package session

import (
	"fmt"
	"os"
)

// capWriter writes a transcript to its file, at most about limit bytes of
// it: the first half goes straight to the file, the rest through a ring
// holding the last half, which finish writes after a line saying how much
// was cut. An agent that prints a gigabyte leaves a transcript of limit
// bytes, with its start and its end (where the CLIs print their result and
// usage), and the session holds at most limit/2 bytes for it.
type capWriter struct {
	f     *os.File
	limit int64 // 0: no cap
	head  int64 // bytes of the head still to write
	tail  tailRing
	total int64
	err   error // the first write error, reported by finish
}

func newCapWriter(f *os.File, limit int64) *capWriter {
	c := &capWriter{f: f, limit: limit}
	if limit > 0 {
		c.tail.size = int(limit / 2)
		c.head = limit - int64(c.tail.size)
	}
	return c
}

// Write never fails the caller: the pty must keep being read whatever
// happens to the disk; the error comes back from finish.
func (c *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if c.limit > 0 {
		if c.head < int64(len(p)) {
			c.tail.write(p[c.head:])
			p = p[:c.head]
		}
		c.head -= int64(len(p))
	}
	if len(p) > 0 {
		c.writeAll(p)
	}
	return n, nil
}

// finish writes the tail, after a line saying what was cut if anything
// was.
func (c *capWriter) finish() error {
	if c.limit == 0 {
		return c.err
	}
	a, b := c.tail.parts()
	kept := c.limit - c.head - int64(c.tail.size) + int64(len(a)+len(b))
	if cut := c.total - kept; cut > 0 {
		notice := fmt.Sprintf("\n[walkie: %d bytes of output cut here; this transcript keeps the first %d and the last %d bytes (transcript_cap %d)]\n",
			cut, c.limit-c.head-int64(c.tail.size), len(a)+len(b), c.limit)
		c.writeAll([]byte(notice))
	}
	c.writeAll(a)
	c.writeAll(b)
	return c.err
}

func (c *capWriter) writeAll(p []byte) {
	if _, err := c.f.Write(p); err != nil && c.err == nil {
		c.err = err
	}
}

// tailRing keeps the last size bytes written to it. Its buffer grows only
// as far as what was written, so a short session pays nothing for the cap.
type tailRing struct {
	size int
	buf  []byte // len(buf) < size while filling, then == size
	next int    // once full: where the oldest byte is, and the next goes
}

func (r *tailRing) write(p []byte) {
	if r.size == 0 {
		return
	}
	if len(p) >= r.size {
		r.buf = append(r.buf[:0], p[len(p)-r.size:]...)
		r.next = 0
		return
	}
	if fill := min(r.size-len(r.buf), len(p)); fill > 0 {
		r.buf = append(r.buf, p[:fill]...)
		p = p[fill:]
	}
	for len(p) > 0 {
		n := copy(r.buf[r.next:], p)
		p = p[n:]
		r.next = (r.next + n) % r.size
	}
}

// parts returns the kept bytes, oldest first, as two slices.
func (r *tailRing) parts() ([]byte, []byte) {
	if len(r.buf) < r.size {
		return r.buf, nil
	}
	return r.buf[r.next:], r.buf[:r.next]
}
