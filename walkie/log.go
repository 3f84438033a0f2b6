package walkie

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"
)

// The log (.walkie/ID/log.jsonl) is the debate's control state and its
// attempts, one JSON line per change, appended and synced under the
// record lock and never rewritten (docs/format.md, "The log"). Each line
// says what happened (its op), which fields of the state it sets (set: a
// merge of the state's top-level fields, null removing one), and, when an
// attempt ended, the attempt's record as the controller logged it. The
// state is the fold of every line's set, in order; a checkpoint
// (checkpoint.go) lets a reader start from a recent summary instead of
// the first line.
//
// Every line carries its own checksum, so a line a crash cut short or a
// disk filled with zeros is told from a line that was written whole: a
// damaged last line is skipped (nothing acknowledged can be in it: a
// change is acknowledged only once its line is synced), and the next
// append ends it and names it; damage before a whole line is refused.

// LogFile is the log's name in a debate's state directory.
const LogFile = "log.jsonl"

// LayoutVersion is the version of a debate directory's layout, written
// on the log's first line: 1 was state.json and turns.jsonl beside the
// record (no log), 2 is the log. A walkie refuses a log of a later one.
const LayoutVersion = 2

// The ops of the log's lines: what each change was. A reader folds every
// line's set whatever its op; the op is for people and for the tools
// that read the history.
const (
	OpInit      = "init"      // walkie init: the debate's first state
	OpMigrated  = "migrated"  // the state of a debate of layout 1, converted
	OpImported  = "imported"  // an attempt a layout-1 walkie logged in turns.jsonl
	OpBegun     = "begun"     // a controller began an attempt: running, durable before its session starts
	OpEnded     = "ended"     // an attempt ended: its record, and its outcome applied to the state
	OpAbandoned = "abandoned" // an attempt begun whose session never started
	OpAppended  = "appended"  // an entry was appended (walkie post, a note, a closing note): last_seq, last_hash
	OpHalt      = "halt"
	OpResume    = "resume"
	OpExtend    = "extend"
	OpStatus    = "status"  // the controller ended or stopped the debate (failed, over budget, …)
	OpClosing   = "closing" // walkie's closing note about to be written
	OpHandled   = "handled" // a watcher or the daemon acted on the record up to a seq
	OpWatch     = "watch"   // walkie watch --once's memory between ticks
	OpCopy      = "copy"    // the supervisor's copy switched on or off
	OpState     = "state"   // any other change
	OpDropped   = "dropped" // walkie repair --drop-log-line gave up a damaged line here
)

// LogLine is one line of the log.
type LogLine struct {
	N  int       `json:"n"` // 1, 2, …: a line removed or moved breaks the count
	Op string    `json:"op"`
	At time.Time `json:"at"`
	// Layout is the directory's layout version, on the first line only.
	Layout int `json:"layout,omitempty"`
	// Torn names the damaged bytes this line's append ended: they lie
	// right before it, and are the bytes a reader skips there.
	Torn *TornBytes `json:"torn,omitempty"`
	// Set holds the state's top-level fields this change set; a field
	// set to null was removed.
	Set json.RawMessage `json:"set,omitempty"`
	// Attempt is the record of the attempt that ended (the controller's
	// turn record), as it was logged.
	Attempt json.RawMessage `json:"attempt,omitempty"`
}

// TornBytes are damaged bytes of the log: a line cut short, zeros.
type TornBytes struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// crcSuffix is how a line ends: its checksum, the CRC-32C (Castagnoli)
// of every byte of the line before it, as 8 hex digits.
const (
	crcOpen   = `,"crc":"`
	crcSuffix = len(crcOpen) + 8 + len(`"}`)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sealJSON ends the JSON object b (as json.Marshal makes it) with its
// checksum and a newline.
func sealJSON(b []byte) []byte {
	body := b[:len(b)-1] // without the closing brace
	out := make([]byte, 0, len(b)+crcSuffix+1)
	out = append(out, body...)
	out = append(out, crcOpen...)
	out = fmt.Appendf(out, "%08x", crc32.Checksum(body, castagnoli))
	return append(out, '"', '}', '\n')
}

// unseal checks the checksum of a line (without its newline) and returns
// the checksum; ok is false when the line is not whole.
func unseal(line []byte) (sum uint32, ok bool) {
	n := len(line)
	if n < crcSuffix+1 || line[0] != '{' || !bytes.Equal(line[n-crcSuffix:n-crcSuffix+len(crcOpen)], []byte(crcOpen)) ||
		line[n-2] != '"' || line[n-1] != '}' {
		return 0, false
	}
	got, err := strconv.ParseUint(string(line[n-10:n-2]), 16, 32)
	if err != nil {
		return 0, false
	}
	sum = crc32.Checksum(line[:n-crcSuffix], castagnoli)
	return sum, uint32(got) == sum
}

// encodeLine is l as a line of the log, sealed.
func encodeLine(l LogLine) ([]byte, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("encode log line %d (%s): %w", l.N, l.Op, err)
	}
	return sealJSON(b), nil
}

// decodeLine reads a whole line of the log (without its newline). ok is
// false for a line that is not whole (its checksum does not match, or it
// is no JSON object): what a crash leaves.
func decodeLine(line []byte) (l LogLine, sum uint32, ok bool) {
	sum, ok = unseal(line)
	if !ok {
		return LogLine{}, 0, false
	}
	if err := json.Unmarshal(line, &l); err != nil || l.N < 1 {
		return LogLine{}, 0, false
	}
	return l, sum, true
}
