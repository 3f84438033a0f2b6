package walkie

import (
	"bytes"
	"fmt"
	"os"
)

// Approve pins the briefing's sha256 in the front matter. It is refused
// once the debate has any entry: from then on the header is part of the
// chain and never changes. It returns the pinned hash.
func Approve(file string) (hash string, err error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return "", err
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return "", err
	}
	defer lock.Unlock()
	data, err := readRecord(file)
	if err != nil {
		return "", err
	}
	d, err := Parse(file, data)
	if err != nil {
		return "", err
	}
	if len(d.Entries) > 0 || !isBlank(d.Tail) {
		return "", &RefusedError{Op: "approve", Reason: "the debate has started: the briefing is fixed once the first entry is written"}
	}
	if bytes.TrimSpace(d.Briefing) == nil {
		return "", &InputError{File: file, Line: d.BriefingLine, Msg: "the briefing is empty", Fix: "write it first (walkie brief draft / edit)"}
	}
	hash = BriefingHash(d.Briefing)
	if d.Meta.BriefingSHA256 == hash {
		return hash, nil
	}
	out := pinBriefing(data, hash)
	if _, err := Parse(file, out); err != nil {
		return "", fmt.Errorf("approve would break the file: %w", err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	return hash, WriteFileAtomic(file, out, fi.Mode().Perm())
}

// pinBriefing sets the briefing_sha256 line of the front matter, keeping
// every other byte (comments, key order) as the person wrote it.
func pinBriefing(data []byte, hash string) []byte {
	end := bytes.Index(data[3:], []byte("\n---\n")) + 3 + 1 // start of the closing fence
	fm := data[:end]
	line := []byte("briefing_sha256: " + hash + "\n")
	var out []byte
	if i := bytes.Index(fm, []byte("\nbriefing_sha256:")); i >= 0 {
		j := bytes.IndexByte(fm[i+1:], '\n') + i + 2
		out = append(append(append(out, fm[:i+1]...), line...), fm[j:]...)
	} else {
		out = append(append(out, fm...), line...)
	}
	return append(out, data[end:]...)
}
