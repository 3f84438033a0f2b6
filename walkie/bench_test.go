package walkie

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkParseVerify10k parses and verifies a record of 10,000 turns.
func BenchmarkParseVerify10k(b *testing.B) {
	data := genRecord(b, 10000, "claude", "codex")
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		d, err := Parse("bench.walkie.md", data)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostProcess runs one whole `walkie post` process on a 10-turn
// file and one on a 10,000-turn file per iteration, interleaved so that
// both see the same machine, and reports each one's cost and their ratio.
// The writer reads only the front matter and a tail window, so the ratio
// must stay under 2.
func BenchmarkPostProcess(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "walkie")
	build := exec.Command("go", "build", "-o", bin, "github.com/walkie-sh/walkie/cmd/walkie")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build walkie: %v\n%s", err, out)
	}
	body := filepath.Join(dir, "body.md")
	if err := os.WriteFile(body, []byte("One more argument, of a usual length for a turn.\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	type target struct {
		file  string
		turns int
		spent time.Duration
	}
	var ts []*target
	for _, n := range []int{10, 10000} {
		d := filepath.Join(dir, strconv.Itoa(n))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		f := filepath.Join(d, "bench.walkie.md")
		if err := os.WriteFile(f, genRecord(b, n, "claude", "codex"), 0o644); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, &target{file: f, turns: n})
	}
	if fi, err := os.Stat(ts[1].file); err != nil || fi.Size() < 1<<20 {
		b.Fatalf("the large file: %v, %v", fi, err)
	}
	post := func(tg *target) {
		from := []string{"claude", "codex"}[tg.turns%2]
		cmd := exec.Command(bin, "post", tg.file, "--from", from, "--body-file", body)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		tg.spent += time.Since(start)
		if err != nil {
			b.Fatalf("post on %d turns: %v\n%s", tg.turns, err, out)
		}
		tg.turns++
	}
	// One untimed round warms the page cache and the state directories.
	for _, tg := range ts {
		post(tg)
		tg.spent = 0
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tg := range ts {
			post(tg)
		}
	}
	b.StopTimer()
	small := float64(ts[0].spent.Nanoseconds()) / float64(b.N)
	large := float64(ts[1].spent.Nanoseconds()) / float64(b.N)
	b.ReportMetric(small, "ns/post-10")
	b.ReportMetric(large, "ns/post-10k")
	b.ReportMetric(large/small, "ratio-10k/10")
	if b.N >= 20 && large >= 2*small {
		b.Errorf("a post on 10,000 turns costs %.2fx one on 10 turns; it must cost under 2x", large/small)
	}
}
