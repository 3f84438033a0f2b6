package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	name, id, data string
}

// sseClient reads a stream's events into a channel until the body ends.
func sseClient(t testing.TB, ctx context.Context, url, lastID string) (<-chan sseEvent, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan sseEvent, 1024)
	if resp.StatusCode != http.StatusOK {
		close(out)
		return out, resp
	}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ev.data = strings.Join(data, "\n")
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return out, resp
}

// nextEntry reads events until an entry event, returning its sequence
// number (from the element's id) and the stream position it carries.
func nextEntry(t *testing.T, events <-chan sseEvent, within time.Duration) (int, string) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.name != "entry" {
				continue
			}
			_, rest, _ := strings.Cut(ev.data, `id="e-`)
			num, _, _ := strings.Cut(rest, `"`)
			seq, err := strconv.Atoi(num)
			if err != nil {
				t.Fatalf("an entry event without its element id: %q", ev.data)
			}
			return seq, ev.id
		case <-timeout:
			t.Fatalf("no entry within %v", within)
		}
	}
}

// A client that reconnects with Last-Event-ID gets every entry recorded
// while it was away, once, in order; one that follows gets each entry as
// it is recorded.
func TestStreamReconnectMissesNoEntry(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer http.DefaultClient.CloseIdleConnections()
	d, file := httpDaemon(t, Options{})
	defer d.stop(t) // before goleak looks
	url := "http://" + d.Addr() + "/d/" + walkie.Key(file) + "/events"
	note := func(i int) {
		if _, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: fmt.Appendf(nil, "note %d\n", i)}); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	events, _ := sseClient(t, ctx, url, "")
	seq, last := nextEntry(t, events, 5*time.Second) // the turn httpDaemon posted
	if seq != 1 {
		t.Fatalf("the first entry is %d", seq)
	}
	for i := 2; i <= 4; i++ {
		note(i)
		if got, id := nextEntry(t, events, 2*time.Second); got != i {
			t.Fatalf("followed: entry %d, want %d", got, i)
		} else {
			last = id
		}
	}
	cancel() // the client goes away
	for range events {
	}

	// Entries recorded while it is away, some of them in one burst.
	for i := 5; i <= 9; i++ {
		note(i)
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	events, _ = sseClient(t, ctx, url, last)
	for want := 5; want <= 9; want++ {
		if got, _ := nextEntry(t, events, 2*time.Second); got != want {
			t.Fatalf("after reconnecting from %s: entry %d, want %d", last, got, want)
		}
	}
	note(10)
	if got, _ := nextEntry(t, events, 2*time.Second); got != 10 {
		t.Fatalf("after the catch-up: entry %d, want 10", got)
	}
	// A position from the future or of another form is the start: the
	// client gets the whole record rather than nothing.
	cancel()
	for range events {
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	events, _ = sseClient(t, ctx, url, "garbage")
	if got, _ := nextEntry(t, events, 2*time.Second); got != 1 {
		t.Fatalf("with a bad Last-Event-ID: first entry %d, want 1", got)
	}
	cancel()
	for range events {
	}
}

// Streams are bounded: past MaxStreams a stream is refused with 503 and
// Retry-After, and a place comes free when a client leaves. The server's
// timeouts do not cut a stream: an idle one stays open past the idle
// timeout, with heartbeats.
func TestStreamLimitAndTimeouts(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer http.DefaultClient.CloseIdleConnections()
	d, file := httpDaemon(t, Options{MaxStreams: 2, HTTPIdleTimeout: 300 * time.Millisecond})
	defer d.stop(t)
	url := "http://" + d.Addr() + "/events"
	ctx1, cancel1 := context.WithCancel(context.Background())
	ev1, r1 := sseClient(t, ctx1, url, "")
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ev2, r2 := sseClient(t, ctx2, url, "")
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("the first two streams: %s, %s", r1.Status, r2.Status)
	}
	if ct := r1.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	_, r3 := sseClient(t, context.Background(), url, "")
	body, _ := io.ReadAll(r3.Body)
	r3.Body.Close()
	if r3.StatusCode != http.StatusServiceUnavailable || r3.Header.Get("Retry-After") == "" {
		t.Errorf("a third stream: %s (Retry-After %q) %s", r3.Status, r3.Header.Get("Retry-After"), body)
	}
	// Both first streams got the fleet's row, and stay open past the
	// idle timeout.
	for i, ev := range []<-chan sseEvent{ev1, ev2} {
		select {
		case e := <-ev:
			if e.name != "row" || !strings.Contains(e.data, "api") {
				t.Errorf("stream %d: first event %+v", i+1, e)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("stream %d: no row", i+1)
		}
	}
	time.Sleep(time.Second) // over three idle timeouts
	if err := walkie.Halt(file, "a change to see"); err != nil {
		t.Fatal(err)
	}
	select {
	case e, ok := <-ev1:
		if !ok || e.name != "row" || !strings.Contains(e.data, "halted") {
			t.Errorf("after the idle timeout, stream 1 got %+v (open %v)", e, ok)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream 1 was cut or got nothing after the idle timeout")
	}
	cancel1()
	for range ev1 {
	}
	sessiontest.WaitFor(t, 5*time.Second, "a place comes free", func() bool {
		_, r := sseClient(t, ctx2, url, "")
		defer r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}
