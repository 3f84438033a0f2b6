package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 12.10: with a cap, a transcript keeps the head and the tail of the
// output and says, between them, how much was cut; output under the cap
// is kept whole, and Result.Bytes still counts every byte.
func TestTranscriptCap(t *testing.T) {
	t.Parallel()
	// Numbered lines, so what was kept can be checked to the line.
	const lines = 200_000 // about 2.3 MB
	script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done`, lines)
	for _, tc := range []struct {
		name string
		cap  int64
	}{{"capped", 256 << 10}, {"uncapped", 0}, {"under the cap", 64 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			spec := Spec{Argv: []string{"sh", "-c", script}, RawPath: filepath.Join(dir, "t.log"), TextPath: filepath.Join(dir, "t.txt"), TranscriptCap: tc.cap}
			r, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if r.Ending != EndExited || r.ExitCode != 0 {
				t.Fatalf("result %+v", r)
			}
			for _, p := range []string{spec.RawPath, spec.TextPath} {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) // the pty's line endings
				first, last := "line 0\n", fmt.Sprintf("line %d\n", lines-1)
				cut := bytes.Contains(b, []byte("[walkie: "))
				switch {
				case !bytes.HasPrefix(b, []byte(first)) || !bytes.HasSuffix(b, []byte(last)):
					t.Errorf("%s: lost its head or its tail", p)
				case tc.cap == 0 || tc.cap > r.Bytes:
					if cut || !bytes.Contains(b, []byte(fmt.Sprintf("\nline %d\n", lines/2))) {
						t.Errorf("%s: cut though under the cap (%d bytes)", p, len(b))
					}
				default:
					if fi, err := os.Stat(p); err != nil || fi.Size() > tc.cap+200 {
						t.Errorf("%s: %v bytes, over the cap of %d (%v)", p, fi.Size(), tc.cap, err)
					}
					i := bytes.Index(b, []byte("[walkie: "))
					notice := string(b[i : i+bytes.IndexByte(b[i:], '\n')])
					if i < 0 || !strings.Contains(notice, "bytes of output cut here") || !strings.Contains(notice, fmt.Sprintf("transcript_cap %d", tc.cap)) {
						t.Errorf("%s: no notice of the cut: %q", p, notice)
					}
					if bytes.Contains(b, []byte(fmt.Sprintf("\nline %d\n", lines/2))) {
						t.Errorf("%s: the middle was kept", p)
					}
				}
			}
			if r.Bytes < lines*7 {
				t.Errorf("Bytes = %d, want every byte counted", r.Bytes)
			}
		})
	}
}

// The tail is kept in a ring: whatever the sizes of the writes, it is the
// last bytes, in order.
func TestTailRing(t *testing.T) {
	var all bytes.Buffer
	r := tailRing{size: 10}
	for i, n := range []int{3, 4, 2, 1, 7, 10, 25, 1, 9, 0, 11} {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		for j := range p {
			p[j] += byte(j % 2) // vary within a write too
		}
		r.write(p)
		all.Write(p)
		a, b := r.parts()
		got := string(a) + string(b)
		want := all.String()
		if len(want) > 10 {
			want = want[len(want)-10:]
		}
		if got != want {
			t.Fatalf("after write %d: ring holds %q, want %q", i, got, want)
		}
	}
}
