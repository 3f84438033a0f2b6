package walkie

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// newTyped creates a format-3 debate between a and b; repo binds it.
func newTyped(t testing.TB, repo string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.walkie.md")
	must(t, Init(file, InitOptions{Participants: []string{"builder", "reviewer"}, MaxRounds: 6, Briefing: []byte(testBriefing), Typed: true, Repo: repo}))
	return file
}

func typed(from, body string, tags Tags) Post {
	return Post{From: from, Body: []byte(body), Tags: tags}
}

func refs(t testing.TB, s string) []Ref {
	t.Helper()
	r, err := ParseRefs(s)
	must(t, err)
	return r
}

// fakeRepo is a repository as a RefResolver: branch heads, the commits
// each branch holds, paths; every commit is written in full (40 hex).
type fakeRepo struct {
	heads    map[string]string
	branches map[string][]string
	paths    map[string]bool
	records  map[string]string // a commit that changes only records → its parent
	fail     error
}

func (r *fakeRepo) Commit(sha string) (string, error) {
	if r.fail != nil {
		return "", r.fail
	}
	for _, cs := range r.branches {
		for _, c := range cs {
			if strings.HasPrefix(c, sha) {
				return c, nil
			}
		}
	}
	return "", nil
}
func (r *fakeRepo) Head(b string) (string, error) { return r.heads[b], nil }
func (r *fakeRepo) Contains(b, c string) (bool, error) {
	for _, x := range r.branches[b] {
		if x == c {
			return true, nil
		}
	}
	return false, nil
}
func (r *fakeRepo) HasPath(p string, _ []string) (bool, error) { return r.paths[p], nil }
func (r *fakeRepo) Unchanged(from, to string) (bool, error) {
	return from == to || r.records[to] == from, nil
}

const (
	shaA = "aaaaaaa111111111111111111111111111111111"
	shaB = "bbbbbbb222222222222222222222222222222222"
	shaX = "ccccccc333333333333333333333333333333333" // on no branch the thread names
)

func mainAt(head string) *fakeRepo {
	hist := []string{shaA}
	if head == shaB {
		hist = append(hist, shaB)
	}
	return &fakeRepo{heads: map[string]string{"main": head, "side": shaX}, branches: map[string][]string{"main": hist, "side": {shaX}},
		paths: map[string]bool{"docs/api.md": true}}
}

func TestParseRef(t *testing.T) {
	good := map[string]Ref{
		"abc1234":                      {SHA: "abc1234"},
		"main@abc1234":                 {Branch: "main", SHA: "abc1234"},
		"feature/x-1@" + shaA:          {Branch: "feature/x-1", SHA: shaA},
		"origin/main@abc1234":          {Branch: "origin/main", SHA: "abc1234"},
		"docs/api.md":                  {Path: "docs/api.md"},
		"./abc1234":                    {Path: "./abc1234"},
		"ABC1234":                      {Path: "ABC1234"}, // upper-case is a name, not a sha
		"abc123":                       {Path: "abc123"},  // six digits are too few for a commit
		"src/a+b.go":                   {Path: "src/a+b.go"},
		strings.Repeat("a", 64):        {SHA: strings.Repeat("a", 64)},
		"x@" + strings.Repeat("f", 64): {Branch: "x", SHA: strings.Repeat("f", 64)},
	}
	for in, want := range good {
		got, err := ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if got.String() != in {
			t.Errorf("ParseRef(%q).String() = %q", in, got.String())
		}
	}
	for in, want := range map[string]string{
		"":                                "empty",
		"main@abc":                        "after the @",
		"main@ABC1234":                    "after the @",
		"@abc1234":                        "no branch",
		"ma in@abc1234":                   "only letters",
		"a..b@abc1234":                    "not a branch name",
		"-x@abc1234":                      "not a branch name",
		"x.lock@abc1234":                  "not a branch name",
		"/etc/passwd":                     "not absolute",
		"../secret":                       "no ..",
		"a/../../b":                       "no ..",
		"docs/my file.md":                 "no spaces",
		"a,b":                             "no spaces",
		"x-->":                            "only letters",
		strings.Repeat("a", 201):          "longer than",
		"main@" + strings.Repeat("a", 65): "after the @",
	} {
		if _, err := ParseRef(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRef(%q): %v, want an error saying %q", in, err, want)
		}
	}
}

func TestTrailers(t *testing.T) {
	for _, c := range []struct {
		name, body string
		want       Tags
		first      int
		problem    string
	}{
		{"none", "Just text.\n", Tags{}, 0, ""},
		{"block", "Looks good.\n\nType: verdict\nVerdict: approve\nRefs: main@abc1234, docs/api.md\n", Tags{Type: "verdict", Verdict: "approve", Refs: []Ref{{Branch: "main", SHA: "abc1234"}, {Path: "docs/api.md"}}}, 3, ""},
		{"before a sign-off", "Fixed.\nType: fix-report\nRefs: abc1234\nSigned-off-by: b\n", Tags{Type: "fix-report", Refs: []Ref{{SHA: "abc1234"}}}, 2, ""},
		{"blank line before the sign-off", "Fixed.\n\nType: info\n\nSigned-off-by: b\n", Tags{Type: "info"}, 3, ""},
		{"any case", "Ok.\n\ntype: Verdict\nVERDICT: changes-requested\nrefs: main@abc1234\n", Tags{Type: "verdict", Verdict: "changes-requested", Refs: []Ref{{Branch: "main", SHA: "abc1234"}}}, 3, ""},
		{"crlf", "Ok.\r\n\r\nType: question\r\n", Tags{Type: "question"}, 3, ""},
		{"refs only", "See it.\n\nRefs: abc1234 def5678\n", Tags{Refs: []Ref{{SHA: "abc1234"}, {SHA: "def5678"}}}, 3, ""},
		{"outside the block", "Type: verdict\n\nSome text.\n", Tags{}, 0, `line 1: "Type: verdict" is a trailer line`},
		{"split block", "Text.\n\nType: verdict\n\nVerdict: approve\nRefs: main@abc1234\n", Tags{}, 0, "line 3:"},
		{"twice", "Text.\n\nType: info\nType: question\n", Tags{}, 0, "a second Type: line"},
		{"unknown type", "Text.\n\nType: lgtm\n", Tags{}, 0, `"lgtm" is not an entry type`},
		{"verdict without its type", "Text.\n\nType: info\nVerdict: approve\n", Tags{}, 0, "only a verdict says approve"},
		{"verdict without a direction", "Text.\n\nType: verdict\nRefs: main@abc1234\n", Tags{}, 0, "which way it goes"},
		{"bad verdict", "Text.\n\nType: verdict\nVerdict: maybe\n", Tags{}, 0, `"maybe" is not a verdict`},
		{"empty value", "Text.\n\nRefs:\n", Tags{}, 0, "has no value"},
		{"bad ref", "Text.\n\nRefs: ../x\n", Tags{}, 0, "no .."},
		{"indented is text", "Text:\n\n    Type: verdict\n", Tags{}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, first, pr := bodyTags([]byte(c.body))
			switch {
			case c.problem != "":
				if pr == nil || !strings.Contains(pr.Error(), c.problem) {
					t.Fatalf("problem %v, want one saying %q", pr, c.problem)
				}
			case pr != nil:
				t.Fatalf("problem: %v", pr)
			case !got.Equal(c.want) || first != c.first:
				t.Fatalf("tags %+v at line %d, want %+v at line %d", got, first, c.want, c.first)
			}
		})
	}
}

// A typed post writes its tags twice, as trailer lines a person reads
// and as marker fields the chain covers; the record verifies, and the
// doorbell names the tags.
func TestTypedPost(t *testing.T) {
	for _, format := range []int{FormatTyped, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { typedPost(t, format) })
	}
}

func typedPost(t *testing.T, format int) {
	file := newTyped(t, "")
	if format < FormatCompact {
		atFormat(t, file, format)
	}
	rc := mustAppend(t, file, typed("builder", "Please review the login fix.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@abc1234")}))
	if rc.Entry.Type != TypeReviewRequest || strings.Join(rc.Entry.Refs, ",") != "main@abc1234" {
		t.Fatalf("receipt %+v", rc.Entry)
	}
	mustAppend(t, file, Post{From: "reviewer", Body: []byte("Changes requested: the token leaks.\n\nType: verdict\nVerdict: changes-requested\nRefs: main@abc1234\n")})
	got := string(readFile(t, file))
	wants := []string{
		"## Turn 1 · builder\n\nPlease review the login fix.\n\nType: review-request\nRefs: main@abc1234\n<!-- walkie seq=1 turn=1 agent=builder at=",
		" type=review-request refs=main@abc1234 prev=sha256:",
		"the token leaks.\n\nType: verdict\nVerdict: changes-requested\nRefs: main@abc1234\n<!-- walkie seq=2 turn=2 agent=reviewer at=",
		" type=verdict verdict=changes-requested refs=main@abc1234 prev=",
	}
	if format >= FormatCompact {
		// The tags are the trailer lines only, which the hash covers.
		wants = []string{
			"## Turn 1 · builder\n\nPlease review the login fix.\n\nType: review-request\nRefs: main@abc1234\n<!-- walkie seq=1 at=",
			"the token leaks.\n\nType: verdict\nVerdict: changes-requested\nRefs: main@abc1234\n<!-- walkie seq=2 at=",
		}
	}
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Fatalf("record lacks %q:\n%s", want, got)
		}
	}
	d := mustVerify(t, file)
	if tg := d.Entries[1].Marker.Tags; tg.Kind() != "verdict changes-requested" {
		t.Fatalf("entry 2 tags %+v", tg)
	}
	sig, err := LoadSignal(StateDir(file, "r"))
	must(t, err)
	if sig.LastEntry.Verdict != VerdictChangesRequested {
		t.Fatalf("doorbell %+v", sig.LastEntry)
	}
	// The flags and the body's trailers agree, or the post is refused.
	_, err = Append(file, Post{From: "builder", Body: []byte("Fixed.\n\nType: fix-report\n"), Tags: Tags{Type: TypeInfo}})
	wantRefused(t, err, "the body's Type: line says fix-report but the flag says info")
	// Trailers alone are not an entry.
	_, err = Append(file, Post{From: "builder", Body: []byte("Type: fix-report\nRefs: abc1234\n")})
	wantRefused(t, err, "the body is empty (trailer lines alone are not an entry")
	// An ack is a person's; a close is not.
	_, err = Append(file, typed("builder", "Seen.\n", Tags{Type: TypeAck, Refs: refs(t, "abc1234")}))
	wantRefused(t, err, "only a supervisor entry is of type ack")
	_, err = Append(file, Post{Supervisor: true, Body: []byte("Done here.\n"), Tags: Tags{Type: TypeClose}})
	wantRefused(t, err, "a supervisor entry cannot be of type close")
}

func wantRefused(t testing.TB, err error, msg string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want a refusal saying %q", err, msg)
	}
}

// A file of format 1 or 2 has no vocabulary: tags are refused, and
// trailer-like lines are text.
func TestTagsNeedFormat3(t *testing.T) {
	file := atFormat(t, newDebate(t, 3, "builder", "reviewer"), FormatVersion)
	_, err := Append(file, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "abc1234")}))
	wantRefused(t, err, "a type or refs need format 3, and this file says walkie: 1")
	mustAppend(t, file, turn("builder", "Text.\n\nType: whatever\nRefs: not a ref\n"))
	d := mustVerify(t, file)
	if !d.Entries[0].Marker.Tags.IsZero() {
		t.Fatalf("a format-1 turn got tags %+v", d.Entries[0].Marker.Tags)
	}
	// A typed marker in a format-1 file is bad input.
	b := strings.Replace(string(readFile(t, file)), " prev=", " type=info prev=", 1)
	if _, err := Parse(file, []byte(b)); err == nil || !strings.Contains(err.Error(), "need format 3, and this file says walkie: 1") {
		t.Fatalf("parse: %v", err)
	}
}

func TestRequireRefs(t *testing.T) {
	file := newTyped(t, "")
	mustAppend(t, file, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest})) // a request need not cite
	_, err := Append(file, typed("reviewer", "Looks fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove}))
	wantRefused(t, err, "a verdict cites what it is about: give a ref")
	mustAppend(t, file, typed("reviewer", "Looks fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "docs/api.md")}))
	_, err = Append(file, typed("builder", "Fixed.\n", Tags{Type: TypeFixReport}))
	wantRefused(t, err, "a fix-report cites what it is about")

	// require_refs replaces the default.
	dir := t.TempDir()
	loose := filepath.Join(dir, "l.walkie.md")
	must(t, os.WriteFile(loose, []byte("---\nwalkie: 3\nid: l\nparticipants: [builder, reviewer]\nmax_rounds: 3\nrequire_refs: [review-request]\n---\n# Briefing\n\nb\n"), 0o644))
	_, err = Append(loose, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest}))
	wantRefused(t, err, "a review-request cites what it is about")
	mustAppend(t, loose, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "abc1234")}),
		typed("reviewer", "Fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove}))
	mustVerify(t, loose)
}

// With the record bound to a repository, every ref resolves there at post
// time, and a verdict names its branch's current head: a stale claim is
// refused with the head it should have named.
func TestRefsResolve(t *testing.T) {
	file := newTyped(t, ".")
	repo := mainAt(shaA)
	post := func(p Post) error { p.Resolver = repo; _, err := Append(file, p); return err }
	wantRefused(t, post(typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@dddddddd")})), "main@dddddddd: dddddddd names no commit")
	wantRefused(t, post(typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "gone@aaaaaaa1")})), "there is no branch gone")
	wantRefused(t, post(typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@ccccccc3")})), "commit ccccccc3 is not on main")
	wantRefused(t, post(typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "docs/nope.md")})), "docs/nope.md: no such path")
	if d := mustVerify(t, file); len(d.Entries) != 0 {
		t.Fatal("a refused post was recorded")
	}
	must(t, post(typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@aaaaaaa, docs/api.md")})))
	// A verdict must name a branch's head, not a bare commit.
	wantRefused(t, post(typed("reviewer", "Fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "aaaaaaa")})), "a verdict names the commit it judged as BRANCH@SHA")
	// main moves on to B: a verdict on A is stale, and says where main is.
	repo.heads["main"], repo.branches["main"] = shaB, []string{shaA, shaB}
	wantRefused(t, post(typed("reviewer", "Fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@aaaaaaa")})),
		"the verdict's ref main@aaaaaaa is stale: main is at bbbbbbb22222 now, not aaaaaaa; review bbbbbbb22222 and cite main@bbbbbbb22222")
	must(t, post(typed("reviewer", "Fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@bbbbbbb")})))
	// A commit of the record itself (git: commit) moves main without
	// changing its code: a verdict on the code's commit is still fresh.
	const shaR = "ddddddd444444444444444444444444444444444"
	repo.heads["main"], repo.branches["main"], repo.records = shaR, []string{shaA, shaB, shaR}, map[string]string{shaR: shaB}
	must(t, post(typed("builder", "Thanks.\n", Tags{Type: TypeInfo})))
	must(t, post(typed("reviewer", "Still fine.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@bbbbbbb")})))
	// Without a resolver (walkie post --verify-refs=false) nothing is asked.
	mustAppend(t, file, typed("builder", "Noted.\n", Tags{Type: TypeInfo, Refs: refs(t, "main@eeeeeee")}))
	// A repository that cannot be asked is an error, not a refusal.
	repo.fail = errors.New("git is gone")
	err := post(typed("reviewer", "Hm.\n", Tags{Type: TypeQuestion, Refs: refs(t, "abc1234")}))
	var re *RefusedError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "git is gone") {
		t.Fatalf("got %v, want the repository's error", err)
	}
}

// close ends the thread as closed: a status of its own, not convergence,
// with the closing text as its reason; only supervisor entries follow.
func TestClose(t *testing.T) {
	file := newTyped(t, "")
	mustAppend(t, file, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "abc1234")}),
		Post{From: "reviewer", Body: []byte("Approved.\n"), Tags: Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@abc1234")}, Sign: true})
	rc := mustAppend(t, file, typed("builder", "Merged as abc1234; thanks.\n", Tags{Type: TypeClose}))
	if rc.Status != StatusClosed || !rc.Progress.Closed {
		t.Fatalf("after the close: %s %+v", rc.Status, rc.Progress)
	}
	_, err := Append(file, turn("reviewer", "One more thing.\n"))
	wantRefused(t, err, "the thread was closed in turn 3 by builder")
	mustAppend(t, file, Post{Supervisor: true, Body: []byte("Read it.\n"), Tags: Tags{Type: TypeAck, Refs: refs(t, "abc1234")}})
	d := mustVerify(t, file)
	st, err := LoadState(StateDir(file, "r"))
	must(t, err)
	if s := DebateStatus(&d.Meta, d.Progress(), st); s != StatusClosed {
		t.Fatalf("status %s", s)
	}
	if why := d.ClosedWhy(); why != "by builder in turn 3: Merged as abc1234; thanks." {
		t.Fatalf("why %q", why)
	}
	sig, err := LoadSignal(StateDir(file, "r"))
	must(t, err)
	if sig.Status != StatusClosed || sig.Turn != "" {
		t.Fatalf("doorbell %+v", sig)
	}
	wantRefused(t, Halt(file, "x"), "the thread is closed")
	if _, err := Extend(file, 1); err == nil {
		t.Fatal("extend of a closed thread")
	}
	// A turn after the close breaks the record (rebuilt by hand, hashes
	// and all).
	raw := string(readFile(t, file))
	last := d.Progress()
	tail := "\n## Turn 4 · reviewer\n\nStill here.\n"
	mk := Marker{Seq: last.Seq + 1, Turn: 4, Agent: "reviewer", At: t0, Prev: last.Hash}
	fd, err := Parse(file, []byte(raw+tail+string(stamp([]byte(tail), &mk, d.Meta.Walkie))))
	must(t, err)
	if err := fd.Verify(); err == nil || !strings.Contains(err.Error(), "turn 4 follows the close in turn 3") {
		t.Fatalf("verify: %v", err)
	}
}

// What an entry's text says and what its marker records must agree: the
// hash covers both, so a difference is a record rebuilt by hand.
func TestVerifyTagsAgree(t *testing.T) {
	file := atFormat(t, newTyped(t, ""), FormatTyped)
	mustAppend(t, file, typed("builder", "Please review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@abc1234")}))
	d := mustVerify(t, file)
	e := d.Entries[0]
	content := e.Raw[:len(e.Raw)-len(markerLine(&e))]
	for _, c := range []struct {
		name  string
		tags  Tags
		body  string
		wants string
	}{
		{"marker without the text's refs", Tags{Type: TypeReviewRequest}, string(content), "its text says type review-request, refs main@abc1234 but its marker records type review-request"},
		{"text without the marker's type", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@abc1234")}, strings.Replace(string(content), "Type: review-request\n", "", 1), "its text says refs main@abc1234 but its marker records type review-request"},
		{"a participant's ack", Tags{Type: TypeAck, Refs: refs(t, "main@abc1234")}, strings.Replace(string(content), "review-request", "ack", 1), "only a supervisor entry is of type ack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mk := e.Marker
			mk.Tags = c.tags
			line := stamp([]byte(c.body), &mk, d.Meta.Walkie)
			rebuilt := append(append(append([]byte(nil), d.Header...), c.body...), line...)
			rd, err := Parse(file, rebuilt)
			must(t, err)
			if err := rd.Verify(); err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("verify: %v, want %q", err, c.wants)
			}
		})
	}
}

// An agent's own turn states its tags in trailer lines; the judge reads
// them, Settle stamps them into the marker and asks the repository.
func TestJudgeTypedTurn(t *testing.T) {
	file := newTyped(t, ".")
	repo := mainAt(shaB)
	snap := readFile(t, file)
	want := Expect{Turn: 1, Agent: "builder", Refs: repo}
	write := func(turn string) {
		t.Helper()
		must(t, os.WriteFile(file, append(append([]byte(nil), snap...), turn...), 0o644))
	}
	// A trailer out of place is malformed, with its line.
	write("\n## Turn 1 · builder\n\nType: review-request\n\nPlease review.\n")
	s, err := Settle(file, snap, want, "")
	must(t, err)
	if s.Outcome != VerdictMalformed || !strings.Contains(s.Detail, "is a trailer line") || s.Line == 0 {
		t.Fatalf("settled %+v", s.Verdict)
	}
	if string(readFile(t, file)) != string(snap) {
		t.Fatal("the rejected turn was not undone")
	}
	// A ref that names nothing in the repository: malformed, undone.
	write("\n## Turn 1 · builder\n\nPlease review.\n\nType: review-request\nRefs: main@dddddddd\n")
	s, err = Settle(file, snap, want, "")
	must(t, err)
	if s.Outcome != VerdictMalformed || !strings.Contains(s.Detail, "names no commit") {
		t.Fatalf("settled %+v", s.Verdict)
	}
	// A good one is stamped with its tags, its commit by the full id the
	// abbreviation stood for, in the marker and the text alike.
	write("\n## Turn 1 · builder\n\nPlease review.\n\ntype: Review-Request\nRefs: main@bbbbbbb\n")
	s, err = Settle(file, snap, want, "")
	must(t, err)
	if s.Outcome != VerdictAccepted || s.Entry.Type != TypeReviewRequest {
		t.Fatalf("settled %+v %+v", s.Verdict, s.Entry)
	}
	d := mustVerify(t, file)
	if mk := d.Entries[0].Marker; mk.Tags.Kind() != TypeReviewRequest || mk.Tags.Refs[0].String() != "main@"+shaB {
		t.Fatalf("marker %+v", mk)
	}
	if !strings.Contains(string(d.Entries[0].Body), "Refs: main@"+shaB+"\n") {
		t.Fatalf("text:\n%s", d.Entries[0].Body)
	}
	// The reviewer's stale verdict is refused by the judge as by the writer.
	snap = readFile(t, file)
	want = Expect{Turn: 2, Agent: "reviewer", Refs: repo}
	write("\n## Turn 2 · reviewer\n\nFine.\n\nType: verdict\nVerdict: approve\nRefs: main@aaaaaaa\nSigned-off-by: reviewer\n")
	s, err = Settle(file, snap, want, "")
	must(t, err)
	if s.Outcome != VerdictMalformed || !strings.Contains(s.Detail, "is stale: main is at bbbbbbb22222 now") {
		t.Fatalf("settled %+v", s.Verdict)
	}
	// A participant's ack is malformed whatever the repository says.
	write("\n## Turn 2 · reviewer\n\nSeen.\n\nType: ack\nRefs: main@bbbbbbb\n")
	if v, _ := Judge(file, snap, readFile(t, file), Expect{Turn: 2, Agent: "reviewer"}); v.Outcome != VerdictMalformed || !strings.Contains(v.Detail, "only a supervisor entry is of type ack") {
		t.Fatalf("judged %+v", v)
	}
}

// fakeTrust says who signed which entry (by seq), and who approved on
// the platform after when.
type fakeTrust struct {
	signed   map[int][]string
	approver string
	at       time.Time
}

func (f *fakeTrust) Signers(e *Entry) ([]string, error) { return f.signed[e.Marker.Seq], nil }

func (f *fakeTrust) Approval(sha string, after time.Time, exclude []string, same SameCommit) (string, error) {
	if f.approver == "" || !f.at.After(after) || slices.Contains(exclude, f.approver) {
		return "", nil
	}
	return f.approver, nil
}

func TestMergeGate(t *testing.T) {
	file := newTyped(t, "")
	trust := &fakeTrust{signed: map[int][]string{}}
	gate := func(sha string) Gate {
		t.Helper()
		d := mustVerify(t, file)
		g, err := d.MergeGate(sha, SamePrefix, trust)
		must(t, err)
		return g
	}
	wantShut := func(sha, why string) {
		t.Helper()
		if g := gate(sha); g.Open || !strings.Contains(g.Why, why) {
			t.Fatalf("gate %s: %+v, want shut saying %q", sha, g, why)
		}
	}
	abc, def, other := "abc1234"+strings.Repeat("1", 33), "def5678"+strings.Repeat("2", 33), "0123456"+strings.Repeat("3", 33)
	wantShut(abc, "no verdict is recorded")
	mustAppend(t, file, typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "main@"+abc)}),
		typed("reviewer", "No.\n", Tags{Type: TypeVerdict, Verdict: VerdictChangesRequested, Refs: refs(t, "main@"+abc)}))
	wantShut(abc, "requests changes")
	mustAppend(t, file, typed("builder", "Fixed.\n", Tags{Type: TypeFixReport, Refs: refs(t, "main@"+def)}),
		typed("reviewer", "Yes.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@"+def)}))
	wantShut(abc, "approves main@"+def+", not "+abc)
	// Nobody signed the verdict: anyone can append one.
	wantShut(def, "no allowed signer signed it")
	trust.signed[4] = []string{"ci-host"}
	wantShut(def, "no person has acknowledged it")
	mustAppend(t, file, Post{Supervisor: true, Body: []byte("Read it; merge abc.\n"), Tags: Tags{Type: TypeAck, Refs: refs(t, abc)}})
	wantShut(def, "no person has acknowledged it")
	// An ack by an abbreviated id does not count, and the gate says why.
	mustAppend(t, file, Post{Supervisor: true, Body: []byte("Read it.\n"), Tags: Tags{Type: TypeAck, Refs: refs(t, def[:7])}})
	wantShut(def, "the supervisor's ack (seq 6) names "+def[:7]+" by an abbreviated id")
	// Unsigned, or signed by the verdict's own signer: no ack.
	mustAppend(t, file, Post{Supervisor: true, Body: []byte("Read it.\n"), Tags: Tags{Type: TypeAck, Refs: refs(t, def)}})
	wantShut(def, "the supervisor's ack (seq 7) is signed by no allowed signer")
	trust.signed[7] = []string{"ci-host"}
	wantShut(def, "the supervisor's ack (seq 7) is signed by ci-host, who signed the verdict")
	trust.signed[7] = []string{"alice@example.com"}
	if g := gate(def); !g.Open || g.Ack == nil || g.Ack.Marker.Seq != 7 || g.Verdict.Turn != 4 || !slices.Equal(g.AckBy, []string{"alice@example.com"}) {
		t.Fatalf("gate: %+v", g)
	}
	wantShut("def5679"+def[7:], "not def5679")
	// Or the platform's approval, given after the verdict, by another.
	trust.signed[7] = nil
	trust.approver, trust.at = "github:bob", time.Now().Add(time.Hour)
	if g := gate(def); !g.Open || g.Ack != nil || !slices.Equal(g.AckBy, []string{"github:bob"}) || !strings.Contains(g.Why, "approved on the platform by github:bob") {
		t.Fatalf("gate: %+v", g)
	}
	trust.signed[4] = []string{"ci-host", "github:bob"}
	wantShut(def, "no person has acknowledged it")
	trust.signed[4] = []string{"ci-host"}
	// A verdict by an abbreviated id never opens it: another commit can
	// come to share the abbreviation.
	mustAppend(t, file, typed("builder", "Shorter.\n", Tags{Type: TypeFixReport, Refs: refs(t, "main@"+def)}),
		typed("reviewer", "Yes.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@"+def[:7])}))
	wantShut(def, "names main@"+def[:7]+" by an abbreviated id")
	// Nor does the builder's approval of its own work, signed or not.
	mustAppend(t, file, typed("builder", "Approving my own.\n", Tags{Type: TypeVerdict, Verdict: VerdictApprove, Refs: refs(t, "main@"+def)}))
	trust.signed[10] = []string{"ci-host"}
	wantShut(def, "is by builder, the thread's builder")
	// A newer verdict shuts it again, whatever was acknowledged before.
	mustAppend(t, file, typed("reviewer", "That broke it.\n", Tags{Type: TypeVerdict, Verdict: VerdictChangesRequested, Refs: refs(t, "main@"+other)}))
	wantShut(def, "requests changes")
}

// A channel holds one open thread: a second is refused while the first
// is open, naming it; the channel's doorbell follows the open thread and
// lets go of it when it closes.
func TestChannel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "reviews")
	o := InitOptions{Participants: []string{"builder", "reviewer"}, MaxRounds: 4, Briefing: []byte(testBriefing)}
	first, err := NewThread(dir, "login", o)
	must(t, err)
	if !IsChannel(dir) || !ActsOn(first) {
		t.Fatal("not the open thread of a channel")
	}
	_, err = NewThread(dir, "logout", o)
	wantRefused(t, err, first+" is open (status open)")
	if _, err := os.Stat(filepath.Join(dir, "logout.walkie.md")); err == nil {
		t.Fatal("the refused thread was made")
	}
	// A thread put there by hand is not acted on.
	stray := filepath.Join(dir, "stray.walkie.md")
	must(t, Init(stray, o))
	if ActsOn(stray) || !ActsOn(filepath.Join(t.TempDir(), "elsewhere.walkie.md")) {
		t.Fatal("ActsOn")
	}
	must(t, os.Remove(stray))
	must(t, os.RemoveAll(StateDir(stray, "stray")))
	mustAppend(t, first, typed("builder", "Review.\n", Tags{Type: TypeReviewRequest, Refs: refs(t, "abc1234")}))
	c, err := LoadChannel(dir)
	must(t, err)
	if c.Open == nil || c.Open.File != "login.walkie.md" || c.Open.Turn != "reviewer" || c.Open.LastEntry.Type != TypeReviewRequest {
		t.Fatalf("channel %+v", c.Open)
	}
	// Halted is not finished: the thread can resume.
	must(t, Halt(first, "lunch"))
	_, err = NewThread(dir, "logout", o)
	wantRefused(t, err, "is open (status halted)")
	must(t, Resume(first))
	mustAppend(t, first, typed("reviewer", "Nothing to review here; closing.\n", Tags{Type: TypeClose}))
	c, err = LoadChannel(dir)
	must(t, err)
	if c.Open != nil || c.Last == nil || c.Last.Status != StatusClosed {
		t.Fatalf("channel after the close: %+v", c)
	}
	second, err := NewThread(dir, "logout", o)
	must(t, err)
	if c, _ = LoadChannel(dir); c.Open.File != "logout.walkie.md" || ActsOn(first) || !ActsOn(second) {
		t.Fatalf("channel %+v", c.Open)
	}
	if m, err := ReadMeta(second); err != nil || !m.IsTyped() || m.ID != "logout" {
		t.Fatalf("meta %+v %v", m, err)
	}
}

func TestReviewFrontMatter(t *testing.T) {
	hdr := func(extra string, format int) string {
		return "---\nwalkie: " + string(rune('0'+format)) + "\nid: t\nparticipants: [a, b]\nmax_rounds: 3\n" + extra + "---\n# Briefing\n"
	}
	for _, c := range []struct {
		name, src string
		line      int
		want      string
	}{
		{"repo in format 1", hdr("repo: .\n", 1), 6, "repo needs format 3, and this file says walkie: 1"},
		{"worktree in format 2", hdr("workspace: worktree\n", 2), 6, "workspace needs format 3"},
		{"a path workspace in a debate", hdr("workspace: src\n", 3), 6, "workspace is a round-table key"},
		{"unknown git mode", hdr("git: push\n", 3), 6, `git: "push" is not a mode walkie knows`},
		{"unknown required type", hdr("require_refs: [verdict, lgtm]\n", 3), 6, `require_refs names "lgtm"`},
		{"fresh verdicts unbound", hdr("fresh_verdicts: false\n", 3), 6, "fresh_verdicts needs a repository"},
		{"bad base", hdr("base: a..b\n", 3), 6, `base "a..b" is neither a branch nor a commit`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.walkie.md", []byte(c.src))
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != c.line || !strings.Contains(ie.Msg, c.want) {
				t.Fatalf("got %v, want line %d saying %q", err, c.line, c.want)
			}
		})
	}
	d, err := Parse("t.walkie.md", []byte(hdr("repo: ..\nrequire_refs: []\nfresh_verdicts: false\ngit: commit\nworkspace: worktree\nbase: main\n", 3)))
	must(t, err)
	m := d.Meta
	if !m.Bound() || m.RefsRequired(TypeVerdict) || m.FreshVerdictsRequired() || !m.CommitsEntries() || !m.Worktrees() || m.Base != "main" {
		t.Fatalf("meta %+v", m)
	}
	if m.RepoDir("/x/y/t.walkie.md") != "/x" {
		t.Fatalf("repo dir %s", m.RepoDir("/x/y/t.walkie.md"))
	}
}

// The branch a worktree's commits came back on is added to the refs of a
// turn the agent wrote itself, in its trailer lines and its marker alike,
// the sign-off kept last.
func TestSettleAddsTheWorktreeRef(t *testing.T) {
	file := newTyped(t, "")
	snap := readFile(t, file)
	extra := Ref{Branch: "walkie/r/turn-1", SHA: "abc1234"}
	for _, c := range []struct{ name, turn, want string }{
		{"no trailers", "\n## Turn 1 · builder\n\nDone.\nSigned-off-by: builder\n\n",
			"\n## Turn 1 · builder\n\nDone.\n\nRefs: walkie/r/turn-1@abc1234\nSigned-off-by: builder\n<!-- walkie seq=1 at="},
		{"trailers of its own", "\n## Turn 1 · builder\n\nFixed.\n\ntype: fix-report\nRefs: docs/api.md\n",
			"\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: docs/api.md, walkie/r/turn-1@abc1234\n<!-- walkie seq=1 at="},
		{"cited already", "\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: walkie/r/turn-1@abc1234\n",
			"\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: walkie/r/turn-1@abc1234\n<!-- walkie seq=1 at="},
		// Issue 32 item 23: the commit once, in its longer form.
		{"cited in full already", "\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: walkie/r/turn-1@abc1234def5678\n",
			"\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: walkie/r/turn-1@abc1234def5678\n<!-- walkie seq=1 at="},
	} {
		t.Run(c.name, func(t *testing.T) {
			must(t, os.WriteFile(file, append(append([]byte(nil), snap...), c.turn...), 0o644))
			s, err := Settle(file, snap, Expect{Turn: 1, Agent: "builder", Extra: &extra}, "")
			must(t, err)
			if s.Outcome != VerdictAccepted {
				t.Fatalf("settled %+v", s.Verdict)
			}
			if got := string(readFile(t, file)[len(snap):]); !strings.HasPrefix(got, c.want) {
				t.Fatalf("recorded\n%q\nwant\n%q", got, c.want)
			}
			d := mustVerify(t, file)
			if refs := d.Entries[0].Marker.Tags.Refs; !slices.ContainsFunc(refs, func(r Ref) bool { return r.Branch == extra.Branch && strings.HasPrefix(r.SHA, extra.SHA) }) {
				t.Fatalf("marker %+v", d.Entries[0].Marker)
			}
			must(t, os.WriteFile(file, snap, 0o644))
			must(t, os.RemoveAll(StateDir(file, "r")))
		})
	}
	// The agent abbreviates the commit walkie names in twelve digits: the
	// record names it once, in twelve, and a reviewer who copies the
	// Refs: line into a post of its own is not refused.
	long := Ref{Branch: "walkie/r/turn-1", SHA: "abc1234def56"}
	must(t, os.WriteFile(file, append(append([]byte(nil), snap...), "\n## Turn 1 · builder\n\nFixed.\n\nType: fix-report\nRefs: walkie/r/turn-1@abc1234, docs/api.md\n"...), 0o644))
	s, err := Settle(file, snap, Expect{Turn: 1, Agent: "builder", Extra: &long}, "")
	must(t, err)
	if s.Outcome != VerdictAccepted {
		t.Fatalf("settled %+v", s.Verdict)
	}
	d := mustVerify(t, file)
	if refs := d.Entries[0].Marker.Tags.Refs; !slices.Equal(refs, []Ref{long, {Path: "docs/api.md"}}) {
		t.Fatalf("refs %v, want the commit once, in full, where the agent put it", refs)
	}
	if !strings.Contains(string(d.Entries[0].Body), "Refs: walkie/r/turn-1@abc1234def56, docs/api.md\n") {
		t.Fatalf("entry %q", d.Entries[0].Body)
	}
	if _, err := Append(file, Post{From: "reviewer", Body: []byte("Checked.\n\nType: verdict\nVerdict: approve\nRefs: walkie/r/turn-1@abc1234def56, docs/api.md\n")}); err != nil {
		t.Fatalf("a post copying the Refs line: %v", err)
	}
}
