package notify

import (
	"errors"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// errCopied: another copier moved HandledSeq first; nothing to send.
var errCopied = errors.New("already copied")

// CopyWanted reports whether the supervisor gets a copy of file's entries:
// the debate's own switch (walkie notify --copy) if it has one, else dflt,
// the config's notify.copy_supervisor.
func CopyWanted(file string, dflt bool) bool {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return dflt
	}
	return CopyWantedIn(walkie.StateDir(file, meta.ID), dflt)
}

// CopyWantedIn is CopyWanted for a caller that knows the debate's state
// directory, dir: the switch is read from the state, which changes, the
// front matter left alone, which does not.
func CopyWantedIn(dir string, dflt bool) bool {
	st, err := walkie.LoadState(dir)
	if err != nil || st.CopySupervisor == nil {
		return dflt
	}
	return *st.CopySupervisor
}

// copyBacklog bounds how many entries one call copies: switching the copy
// on for a long debate sends its latest entries, not its history.
const copyBacklog = 10

// CopyEntries emits an EventEntry for every turn recorded after the
// state's HandledSeq and moves HandledSeq to the last entry. HandledSeq
// moves first, under the record lock, so two copiers (a daemon and a cron
// tick) never both send an entry, and a crash loses a copy rather than
// sending it twice. Supervisor notes are not copied to the supervisor.
func CopyEntries(file string, emit func(controller.Event)) (int, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return 0, err
	}
	p := d.Progress()
	var from int
	_, _, err = walkie.UpdateState(file, walkie.OpHandled, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		if s.HandledSeq >= p.Seq {
			return errCopied
		}
		from, s.HandledSeq = s.HandledSeq, p.Seq
		return nil
	})
	if errors.Is(err, errCopied) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var entries []walkie.Entry
	for _, e := range d.Entries {
		if e.Marker.Seq > from && e.Kind == walkie.KindTurn {
			entries = append(entries, e)
		}
	}
	if len(entries) > copyBacklog {
		entries = entries[len(entries)-copyBacklog:]
	}
	for _, e := range entries {
		emit(controller.Event{Kind: controller.EventEntry, Debate: d.Meta.ID, File: file, Turn: e.Turn, Round: d.Meta.RoundOf(e.Turn), Agent: e.Agent,
			Started: e.Marker.At, Line: string(e.Body)})
	}
	return len(entries), nil
}
