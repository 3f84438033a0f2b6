package controller

import (
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// decide reads the record and the log without the lock while people post
// beside it: whatever it reads, it must never find the record behind the
// log (which it would refuse as a record cut short). Every writer appends
// to the record first and logs it after, so decide reads the log first.
func TestDecideBesidePosts(t *testing.T) {
	const posts = 300
	file, cfg := testDebate(t, posts, nil, "a", "b")
	c, err := newController(Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	done := make(chan error, 1)
	go func() {
		for i := range posts {
			if _, err := walkie.Append(file, walkie.Post{From: []string{"a", "b"}[i%2], Body: []byte("A post.\n")}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
		if _, err := c.decide(); err != nil {
			t.Fatalf("decide beside a post: %v", err)
		}
	}
}
