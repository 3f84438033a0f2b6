package walkie

import (
	"bytes"
	"fmt"
	"os"
)

// SetBriefing replaces the text under `# Briefing` with text. Like
// Approve, it is refused once the debate has any entry (the header is then
// part of the chain), and also while a controller runs the debate: the
// running agent's turn is judged against a snapshot of the file.
//
// Changing an approved briefing removes its pin: the new text must be
// approved again before any agent runs. unpinned reports that it happened.
// Text equal to the current briefing changes nothing.
func SetBriefing(file string, text []byte) (unpinned bool, err error) {
	brief := BriefingText(text)
	if len(brief) == 0 {
		return false, &InputError{File: file, Msg: "the new briefing is empty", Fix: "write the briefing's text; `walkie brief draft` gives a template"}
	}
	if err := checkBriefingText(file, brief); err != nil {
		return false, err
	}
	meta, err := ReadMeta(file)
	if err != nil {
		return false, err
	}
	dir := StateDir(file, meta.ID)
	if ControllerRunning(dir) {
		return false, &RefusedError{Op: "briefing change", Reason: "a controller is running this debate: the briefing cannot change under it"}
	}
	lock, err := LockRecord(dir)
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	data, err := readRecord(file)
	if err != nil {
		return false, err
	}
	d, err := Parse(file, data)
	if err != nil {
		return false, err
	}
	if len(d.Entries) > 0 || !isBlank(d.Tail) {
		return false, &RefusedError{Op: "briefing change", Reason: "the debate has started: the briefing is fixed once the first entry is written"}
	}
	if bytes.Equal(d.Briefing, brief) {
		return false, nil
	}
	m := d.Meta
	unpinned = m.BriefingSHA256 != ""
	m.BriefingSHA256 = ""
	var b bytes.Buffer
	b.Write(renderMeta(m))
	b.WriteString(briefingHeading + "\n\n")
	b.Write(brief)
	out := b.Bytes()
	nd, err := Parse(file, out)
	if err != nil {
		return false, fmt.Errorf("the new briefing would break the file: %w", err)
	}
	if !bytes.Equal(nd.Briefing, brief) || len(nd.Entries) > 0 || !isBlank(nd.Tail) {
		// A line in the text that reads as an entry heading or a marker
		// would end the briefing early.
		return false, &InputError{File: file, Msg: "the new briefing holds a line that reads as a turn heading, `## Supervisor` or a walkie marker",
			Fix: "reword that line: those lines are reserved for entries"}
	}
	fi, err := os.Stat(file)
	if err != nil {
		return false, err
	}
	if err := WriteFileAtomic(file, out, fi.Mode().Perm()); err != nil {
		return false, err
	}
	return unpinned, nil
}
