package roundtable

import (
	"fmt"
	"io"
	"os"
)

// agentFile is what an agent left in a file walkie asked it to write (a
// verdict, a phase's output), read no further than walkie would accept:
// an agent can leave a gibibyte, and the Ready check reads the file on
// every quiet moment of the session.
type agentFile struct {
	data []byte // the file, or its first limit bytes when over
	size int64  // the file's whole size; more than limit when over
}

// over reports whether the file is bigger than the limit it was read with.
func (f agentFile) over() bool { return f.size > int64(len(f.data)) }

// kept is what is kept for inspection: the file, or when it was over the
// limit its first bytes and a note saying so.
func (f agentFile) kept() []byte {
	if !f.over() {
		return f.data
	}
	note := fmt.Sprintf("\n\n[walkie: the agent's file was %d bytes or more; only its first %d are kept here]\n", f.size, len(f.data))
	return append(append([]byte(nil), f.data...), note...)
}

// tooBig is the error for a file over limit, naming it (by the name the
// agent was given) and the limit.
func (f agentFile) tooBig(name string, limit int) error {
	return fmt.Errorf("%s is %d bytes or more, over the limit of %d; walkie read no further", name, f.size, limit)
}

// readAgentFile reads at most limit bytes of path, and learns its size.
func readAgentFile(path string, limit int) (agentFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return agentFile{}, err
	}
	defer f.Close()
	// The file may still grow while it is read: the bound holds anyway.
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return agentFile{}, fmt.Errorf("read %s: %w", path, err)
	}
	out := agentFile{data: b, size: int64(len(b))}
	if len(b) > limit {
		out.data = b[:limit]
		if fi, err := f.Stat(); err == nil {
			out.size = max(out.size, fi.Size())
		}
	}
	return out, nil
}
