package controller

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/walkie"
)

// checkBriefing refuses a debate whose briefing is not approved, unless
// the run was started with Approve (CI), which pins it and says so.
func (c *controller) checkBriefing(d *walkie.Doc) error {
	if d.Meta.BriefingSHA256 != "" {
		return nil // Verify has checked the text against the pin
	}
	if !c.opts.Approve {
		return badInput(&walkie.InputError{File: c.file, Line: d.BriefingLine, Msg: "the briefing is not approved",
			Fix: fmt.Sprintf("read it, then run `walkie brief approve %s` (or `walkie auto --approve` in CI)", c.opts.File)})
	}
	a, err := briefing.Approve(c.file, d.Briefing)
	switch {
	case errors.Is(err, briefing.ErrPlaceholder):
		return badInput(&walkie.InputError{File: c.file, Line: d.BriefingLine, Msg: "the briefing is still empty or the bare template, so --approve will not pin it",
			Fix: fmt.Sprintf("write it first: walkie brief edit %s, or walkie brief distill %s --from CHAT", c.opts.File, c.opts.File)})
	case err != nil:
		return badInput(err)
	}
	if a.NotKept != nil {
		c.log.Warn("approved, but the copy kept for later diffs was not written", zap.Error(a.NotKept))
	}
	hash := a.Hash
	c.log.Warn("briefing approved non-interactively (--approve)", zap.String("briefing_sha256", hash))
	c.emit(Event{Kind: EventNote, Line: "briefing approved non-interactively (--approve), sha256 " + hash[:12]})
	return nil
}
