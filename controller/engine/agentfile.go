package engine

import (
	"fmt"
	"io"
	"os"

	"github.com/walkie-sh/walkie/walkie"
)

// AgentFile is what an agent left in a file walkie asked it to write (a
// verdict, a phase's output, a distilled briefing), read no further than
// walkie would accept: an agent can leave a gibibyte, and a Ready check
// reads the file on every quiet moment of the session.
type AgentFile struct {
	Data []byte // the file, or its first limit bytes when over
	Size int64  // the file's whole size; more than limit when over
}

// Over reports whether the file is bigger than the limit it was read with.
func (f AgentFile) Over() bool { return f.Size > int64(len(f.Data)) }

// Kept is what is kept for inspection: the file, or when it was over the
// limit its first bytes and a note saying so.
func (f AgentFile) Kept() []byte {
	if !f.Over() {
		return f.Data
	}
	note := fmt.Sprintf("\n\n[walkie: the agent's file was %d bytes or more; only its first %d are kept here]\n", f.Size, len(f.Data))
	return append(append([]byte(nil), f.Data...), note...)
}

// TooBig is the error for a file over limit, naming it (by the name the
// agent was given) and the limit.
func (f AgentFile) TooBig(name string, limit int) error {
	return fmt.Errorf("%s is %d bytes or more, over the limit of %d; walkie read no further", name, f.Size, limit)
}

// ReadAgentFile reads at most limit bytes of path, and learns its size.
// Only a regular file is read: the agent may have left a named pipe or a
// link to a device there, and the reader must not wait on it
// (walkie.OpenRegular; the error is then a *walkie.NotRegularError).
func ReadAgentFile(path string, limit int) (AgentFile, error) {
	f, err := walkie.OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return AgentFile{}, err
	}
	defer f.Close()
	// The file may still grow while it is read: the bound holds anyway.
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return AgentFile{}, fmt.Errorf("read %s: %w", path, err)
	}
	out := AgentFile{Data: b, Size: int64(len(b))}
	if len(b) > limit {
		out.Data = b[:limit]
		if fi, err := f.Stat(); err == nil {
			out.Size = max(out.Size, fi.Size())
		}
	}
	return out, nil
}
